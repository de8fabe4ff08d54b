import type { Transporter } from "nodemailer";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Sends one message. Rejects when the SMTP server refuses it or cannot be reached. */
  send(message: MailMessage): Promise<void>;
}

/**
 * A mailer over SMTP (`SMTP_URL`, e.g. `smtp://user:pass@host:587`), sending
 * as `from` (`SMTP_FROM`). nodemailer is loaded with the first message: a
 * process that never mails never loads it.
 */
export function createSmtpMailer(options: { url: string; from: string }): Mailer {
  let transport: Promise<Transporter> | undefined;
  return {
    async send(message) {
      transport ??= import("nodemailer").then((nodemailer) => nodemailer.default.createTransport(options.url));
      await (await transport).sendMail({ from: options.from, ...message });
    },
  };
}
