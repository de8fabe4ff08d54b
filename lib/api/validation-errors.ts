import type { z } from "zod";

/** One problem with the input, as the API reports it: the field, and what is wrong with it, for people. */
export interface FieldError {
  field: string;
  message: string;
}

type Issue = z.core.$ZodRawIssue;

/**
 * For a refinement (`{ when: whenFieldsValid }`): judge the whole only once
 * its parts passed, so a typo is reported as a typo, not also as what it
 * failed to change.
 */
export const whenFieldsValid = (payload: { issues: readonly unknown[] }): boolean => payload.issues.length === 0;

const TYPE_NAMES: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "true or false",
  array: "an array",
  object: "an object",
  null: "null",
};

const typeName = (expected: string) => TYPE_NAMES[expected] ?? expected;

function bound(issue: Issue & { origin?: string }, limit: unknown, side: "least" | "most"): string {
  const n = Number(limit);
  switch (issue.origin) {
    case "string":
      return side === "least" && n === 1 ? "must not be empty" : `must be at ${side} ${n} characters long`;
    case "array":
    case "set":
      return side === "least" && n === 1 ? "must not be empty" : `must have at ${side} ${n} items`;
    default:
      return `must be at ${side} ${n}`;
  }
}

const FORMATS: Record<string, string> = {
  datetime: "must be an ISO-8601 date-time with a time zone, e.g. 2026-12-01T09:30:00Z",
  email: "must be an e-mail address",
  url: "must be a URL",
};

/**
 * The message for one issue zod found, written for the person reading the
 * answer; used as the per-parse error map, so a message a schema sets itself
 * (a refinement, a regex's explanation) wins over it.
 */
export function humanMessage(issue: Issue): string | undefined {
  if ((issue.code === "invalid_type" || issue.code === "invalid_union") && issue.input === undefined) {
    return "is required";
  }
  switch (issue.code) {
    case "invalid_type":
      return `must be ${typeName(String(issue.expected))}, not ${describe(issue.input)}`;
    case "too_small":
      return bound(issue, issue.minimum, "least");
    case "too_big":
      return bound(issue, issue.maximum, "most");
    case "invalid_value":
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(", ")}`;
    case "invalid_format":
      return FORMATS[issue.format] ?? `must be a valid ${issue.format}`;
    case "invalid_union": {
      const expected = issue.errors.flatMap((branch) =>
        branch.filter((inner) => inner.code === "invalid_type").map((inner) => typeName(String(inner.expected))),
      );
      return expected.length === issue.errors.length ? `must be ${expected.join(" or ")}` : "is not valid here";
    }
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}`;
    default:
      return undefined;
  }
}

function describe(input: unknown): string {
  if (input === null) return "null";
  if (Array.isArray(input)) return "an array";
  if (typeof input === "number" && Number.isNaN(input)) return "a non-number";
  return typeName(typeof input);
}

/**
 * `events[1].url`: object keys joined with dots, array indices in brackets;
 * a key that is not a plain name (empty, spaces, dots, control characters)
 * as a quoted, escaped string in brackets: `[""]`, `metadata["a.b"]`.
 */
export function fieldName(path: readonly PropertyKey[]): string {
  let name = "";
  for (const key of path) {
    if (typeof key === "number") name += `[${key}]`;
    else if (!/^[A-Za-z0-9_$-]+$/.test(String(key))) name += `[${JSON.stringify(String(key))}]`;
    else name += name ? `.${String(key)}` : String(key);
  }
  return name;
}

/**
 * Every problem of a failed parse, one per field: an unknown key becomes
 * its own entry naming it; a problem with the body as a whole is `(body)`.
 */
export function fieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.flatMap((issue) => {
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({
        field: fieldName([...issue.path, key]),
        message: "is not a field of this request",
      }));
    }
    return [{ field: fieldName(issue.path) || "(body)", message: issue.message }];
  });
}
