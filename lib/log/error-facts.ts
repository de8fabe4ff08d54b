/** What a log line says about an error: never more. */
export interface ErrorFacts {
  name: string;
  code?: string;
  message: string;
}

const MAX_MESSAGE = 300;

/**
 * Reduces any thrown value to its name, code and message, safe to log. A
 * failed drizzle query is reported by its cause (the driver's error), because
 * its own message carries the statement and its parameters — sealed secrets
 * included. A node-postgres error object holds its whole client; only its
 * code and message are read. AggregateErrors (a refused connection to every
 * address) are reported by their first error.
 */
export function errorFacts(error: unknown): ErrorFacts {
  let current = error as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  for (let depth = 0; depth < 5 && current && typeof current === "object"; depth++) {
    const isQueryWrapper = typeof current.message === "string" && current.message.startsWith("Failed query:");
    const firstOfMany = Array.isArray(current.errors) && !current.message ? current.errors[0] : undefined;
    if (isQueryWrapper && current.cause) current = current.cause as typeof current;
    else if (firstOfMany) current = firstOfMany as typeof current;
    else break;
  }
  if (!current || typeof current !== "object") return { name: typeof error, message: clip(String(error)) };
  const facts: ErrorFacts = {
    name: typeof current.name === "string" ? current.name : "Error",
    message: clip(typeof current.message === "string" && current.message ? current.message : String(current)),
  };
  if (typeof current.code === "string" || typeof current.code === "number") facts.code = String(current.code);
  return facts;
}

function clip(message: string): string {
  // A query wrapper that had no cause still must not leak its parameters.
  const withoutParams = message.replace(/\nparams:[\s\S]*$/, "");
  return withoutParams.length > MAX_MESSAGE ? `${withoutParams.slice(0, MAX_MESSAGE)}…` : withoutParams;
}
