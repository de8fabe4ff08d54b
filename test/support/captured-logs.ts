import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../lib/log/logger.ts";

/** One line the product logged, parsed. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A debug-level JSON logger whose every line lands, parsed, in `lines`. */
export function capturedLogs(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger({
    level: "debug",
    format: "json",
    destination: new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    }),
  });
  return { logger, lines };
}
