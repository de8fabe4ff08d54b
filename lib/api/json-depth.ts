/** The deepest nesting of arrays and objects the API accepts in a JSON body. */
export const JSON_DEPTH_LIMIT = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * True when the JSON text nests arrays and objects deeper than `limit`. One
 * pass, no recursion and no allocation, stopping at the first level too deep;
 * strings are skipped whole (brackets inside them do not count). Text that is
 * not JSON is judged the same way and left to the parser to refuse.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === QUOTE) {
      i = closingQuote(text, i);
      if (i === -1) return false;
    } else if (char === OPEN_ARRAY || char === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if (char === CLOSE_ARRAY || char === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}

/** Where the string opened at `open` ends: the next quote after an even run of backslashes; -1 if none. */
function closingQuote(text: string, open: number): number {
  let end = open;
  for (;;) {
    end = text.indexOf('"', end + 1);
    if (end === -1) return -1;
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return end;
  }
}
