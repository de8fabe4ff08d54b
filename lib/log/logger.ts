import { createRequire } from "node:module";
import { pino, type DestinationStream, type Logger } from "pino";
import { errorFacts } from "./error-facts.ts";

export type { Logger };

export type LogFormat = "json" | "pretty";

export interface LoggerOptions {
  /** pino level name; `silent` logs nothing. */
  level: string;
  /** `json`: one object per line (production); `pretty`: readable lines for a terminal. */
  format: LogFormat;
  /** Where lines go (tests capture them); stdout otherwise. */
  destination?: DestinationStream;
}

/**
 * The product's one logger. Errors passed as `err` are reduced to their
 * facts (name, code, message): never a database client, a query's
 * parameters or a stack (see errorFacts). Components log through children,
 * e.g. `logger.child({ component: "lane" })`.
 */
export function createLogger(options: LoggerOptions): Logger {
  const settings = {
    level: options.level,
    base: undefined,
    serializers: { err: errorFacts },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (options.destination) return pino(settings, options.destination);
  if (options.format === "json") return pino(settings);
  return pino(settings, prettyStream());
}

/** A logger that writes nothing (tests, tools that report on their own). */
export const silentLogger: Logger = pino({ level: "silent" });

function prettyStream(): DestinationStream {
  // Loaded only for terminals: production (JSON) never pays for it.
  const require = createRequire(import.meta.url);
  const pretty = require("pino-pretty") as (options: object) => DestinationStream;
  return pretty({
    sync: true,
    colorize: process.stdout.isTTY,
    ignore: "component",
    messageFormat: "{if component}[{component}] {end}{msg}",
    translateTime: "HH:MM:ss.l",
  });
}
