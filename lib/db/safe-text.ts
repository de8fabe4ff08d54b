// C0 controls but tab, line feed and carriage return; DEL.
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g;

/**
 * Makes text from outside (a subscriber's response, an error message) safe
 * to store in PostgreSQL `text` and `jsonb`: lone surrogates and control
 * characters (NUL, which PostgreSQL refuses, included) become U+FFFD.
 * Invalid UTF-8 already became U+FFFD when the bytes were decoded.
 */
export function safeText(text: string): string;
export function safeText(text: string | null): string | null;
export function safeText(text: string | null): string | null {
  return text === null ? null : text.toWellFormed().replace(CONTROL, "\uFFFD");
}
