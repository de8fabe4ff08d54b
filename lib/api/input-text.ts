import type { z } from "zod";
import { codePoint } from "../code-point.ts";

// C0 controls (tab, LF and CR allowed where text may span lines), DEL and the C1 controls.
const CONTROL_MULTILINE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Why `text` cannot be stored as it is, or undefined when it can: a lone
 * surrogate, or a control character (tab, LF and CR allowed when `multiline`).
 */
export function textProblem(text: string, multiline: boolean): string | undefined {
  if (!text.isWellFormed()) return "must be valid Unicode text (it holds a lone surrogate)";
  const control = (multiline ? CONTROL_MULTILINE : CONTROL).exec(text);
  return control ? `must not contain control characters (${codePoint(control[0])})` : undefined;
}

/** Where a value sits: its key, under its parent's place (a linked list, so deep input costs no copies). */
interface Place {
  key: PropertyKey;
  parent: Place | undefined;
}

const pathOf = (place: Place | undefined): PropertyKey[] => {
  const path: PropertyKey[] = [];
  for (let at = place; at; at = at.parent) path.unshift(at.key);
  return path;
};

/**
 * Every string in `value`, and every object key, that PostgreSQL could not
 * store or a person could not read: lone surrogates (PostgreSQL would store a
 * replacement character, so the text would not read back), NUL (refused by
 * `text` and `jsonb`) and other control characters. `multiline` allows tab,
 * LF and CR (bodies); path and query values allow none. One zod issue per
 * string, with its path, so it is reported like any other invalid field.
 * Walks without recursion: no nesting depth can overflow the stack.
 */
export function textIssues(value: unknown, multiline: boolean): z.core.$ZodIssue[] {
  const issues: z.core.$ZodIssue[] = [];
  const pending: Array<{ value: unknown; place: Place | undefined }> = [{ value, place: undefined }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value: item, place } = next;
    if (typeof item === "string") {
      const message = textProblem(item, multiline);
      if (message) issues.push({ code: "custom", path: pathOf(place), message, input: item });
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) pending.push({ value: item[i], place: { key: i, parent: place } });
    } else if (item !== null && typeof item === "object") {
      for (const [key, child] of Object.entries(item).reverse()) {
        const keyProblem = textProblem(key, false);
        const at = { key, parent: place };
        if (keyProblem) {
          issues.push({
            code: "custom",
            path: pathOf(at),
            message: `is not a field name: it ${keyProblem}`,
            input: key,
          });
        } else {
          pending.push({ value: child, place: at });
        }
      }
    }
  }
  return issues;
}
