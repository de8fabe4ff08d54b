import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  to: string[];
  subject: string;
  /** The raw message: headers and body. */
  data: string;
}

export interface SmtpSink {
  /** `smtp://127.0.0.1:<port>`, for `SMTP_URL`. */
  url: string;
  mails: ReceivedMail[];
  close(): Promise<void>;
}

/**
 * A real SMTP server on loopback that accepts every message and keeps it.
 * Plain text: no STARTTLS, no auth. On `port` when given (to come back where
 * a closed one was), any free one otherwise; `mails` carries on from `keep`.
 */
export async function startSmtpSink(options: { port?: number; keep?: ReceivedMail[] } = {}): Promise<SmtpSink> {
  const mails: ReceivedMail[] = options.keep ?? [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const data = Buffer.concat(chunks).toString("utf8");
        // Long headers are folded over several lines; unfold before reading one.
        const headers = data.split("\r\n\r\n")[0]!.replace(/\r\n[ \t]+/g, " ");
        mails.push({
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          subject: /^Subject: (.*)$/m.exec(headers)?.[1] ?? "",
          data,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
