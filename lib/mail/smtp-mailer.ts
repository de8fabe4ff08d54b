import nodemailer from "nodemailer";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Sends one message. Rejects when the SMTP server refuses it or cannot be reached. */
  send(message: MailMessage): Promise<void>;
}

/** A mailer over SMTP (`SMTP_URL`, e.g. `smtp://user:pass@host:587`), sending as `from` (`SMTP_FROM`). */
export function createSmtpMailer(options: { url: string; from: string }): Mailer {
  const transport = nodemailer.createTransport(options.url);
  return {
    async send(message) {
      await transport.sendMail({ from: options.from, ...message });
    },
  };
}
