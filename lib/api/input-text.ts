import type { z } from "zod";

// C0 controls (tab, LF and CR allowed where text may span lines), DEL and the C1 controls.
const CONTROL_MULTILINE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

const codePoint = (char: string) => `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;

/** Why `text` cannot be stored as it is, or undefined when it can. */
function textProblem(text: string, multiline: boolean): string | undefined {
  if (!text.isWellFormed()) return "must be valid Unicode text (it holds a lone surrogate)";
  const control = (multiline ? CONTROL_MULTILINE : CONTROL).exec(text);
  return control ? `must not contain control characters (${codePoint(control[0])})` : undefined;
}

/**
 * Every string in `value`, and every object key, that PostgreSQL could not
 * store or a person could not read: lone surrogates (PostgreSQL would store a
 * replacement character, so the text would not read back), NUL (refused by
 * `text` and `jsonb`) and other control characters. `multiline` allows tab,
 * LF and CR (bodies); path and query values allow none. One zod issue per
 * string, with its path, so it is reported like any other invalid field.
 */
export function textIssues(value: unknown, multiline: boolean, path: PropertyKey[] = []): z.core.$ZodIssue[] {
  if (typeof value === "string") {
    const message = textProblem(value, multiline);
    return message ? [{ code: "custom", path, message, input: value }] : [];
  }
  if (Array.isArray(value)) return value.flatMap((item, index) => textIssues(item, multiline, [...path, index]));
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([key, item]) => {
      const keyProblem = textProblem(key, false);
      const at = [...path, key];
      return keyProblem
        ? [{ code: "custom" as const, path: at, message: `is not a field name: it ${keyProblem}`, input: key }]
        : textIssues(item, multiline, at);
    });
  }
  return [];
}
