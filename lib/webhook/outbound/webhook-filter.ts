/**
 * A webhook's filter: a small expression over the attributes the catalogue
 * declares for an event (`currency in ["EUR", "USD"] and not status == "void"`),
 * checked when it is set and turned into an SQL/JSON path that routing
 * evaluates against the attributes captured when the event was published.
 *
 *   filter     := or
 *   or         := and ("or" and)*
 *   and        := unary ("and" unary)*
 *   unary      := "not" unary | "(" filter ")" | comparison
 *   comparison := name "==" value | name "!=" value | name "in" "[" value ("," value)* "]" | "exists" "(" name ")"
 *   name       := [a-z_][a-z0-9_]*            an attribute the catalogue declares
 *   value      := a JSON string, e.g. "EUR"
 *
 * Attributes are compared as text, exactly. An attribute an event lacks, or
 * holds as null, equals no value: `name == "x"` is false, `name != "x"` true,
 * `exists(name)` false. No code runs: the path has only comparisons and logic.
 */

import type { CatalogueEntry } from "../catalogue/catalogue-entry.ts";

/** The longest filter accepted, in characters. */
export const FILTER_MAX_LENGTH = 1_000;
/** The longest value accepted, in characters. */
const VALUE_MAX_LENGTH = 200;

export type FilterNode =
  | { kind: "eq"; name: string; value: string }
  | { kind: "in"; name: string; values: string[] }
  | { kind: "exists"; name: string }
  | { kind: "not"; operand: FilterNode }
  | { kind: "and"; operands: FilterNode[] }
  | { kind: "or"; operands: FilterNode[] };

/** A filter that does not parse: what was expected, at which character (1-based). */
export class FilterSyntaxError extends Error {
  override name = "FilterSyntaxError";
  readonly position: number;
  readonly reason: string;
  constructor(position: number, reason: string) {
    super(`position ${position}: ${reason}`);
    this.position = position;
    this.reason = reason;
  }
}

interface Token {
  kind: "name" | "keyword" | "string" | "symbol" | "end";
  text: string;
  value?: string;
  /** 1-based. */
  position: number;
}

const KEYWORDS = new Set(["and", "or", "not", "in", "exists"]);
const NAME = /[a-z_][a-z0-9_]*/y;
const JSON_STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const SYMBOL = /==|!=|[()[\],]/y;
const SPACE = /[ \t\r\n]+/y;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  const sticky = (pattern: RegExp) => {
    pattern.lastIndex = at;
    return pattern.exec(text)?.[0];
  };
  while (at < text.length) {
    const space = sticky(SPACE);
    if (space) {
      at += space.length;
      continue;
    }
    const position = at + 1;
    const name = sticky(NAME);
    const symbol = name ? undefined : sticky(SYMBOL);
    const string = name || symbol ? undefined : sticky(JSON_STRING);
    if (name) tokens.push({ kind: KEYWORDS.has(name) ? "keyword" : "name", text: name, position });
    else if (symbol) tokens.push({ kind: "symbol", text: symbol, position });
    else if (string) tokens.push({ kind: "string", text: string, value: stringValue(string, position), position });
    else if (text[at] === '"') throw new FilterSyntaxError(position, "a string that is not a valid JSON string");
    else if (/[A-Z]/.test(text[at]!)) throw new FilterSyntaxError(position, "attribute names are lower-case");
    else if (/[-0-9'.]/.test(text[at]!)) {
      throw new FilterSyntaxError(position, 'values are strings in double quotes, e.g. "EUR"');
    } else throw new FilterSyntaxError(position, `unexpected ${JSON.stringify(text[at])}`);
    at += (name ?? symbol ?? string)!.length;
  }
  tokens.push({ kind: "end", text: "", position: text.length + 1 });
  return tokens;
}

function stringValue(literal: string, position: number): string {
  const value = JSON.parse(literal) as string;
  if (value.includes("\u0000")) throw new FilterSyntaxError(position, "a value may not hold \\u0000");
  if (!value.isWellFormed()) throw new FilterSyntaxError(position, "a value may not hold a lone surrogate");
  if (value.length > VALUE_MAX_LENGTH) {
    throw new FilterSyntaxError(position, `a value longer than ${VALUE_MAX_LENGTH} characters`);
  }
  return value;
}

/** Parses a filter; throws FilterSyntaxError naming the position of the first thing that is wrong. */
export function parseFilter(text: string): FilterNode {
  if (text.length > FILTER_MAX_LENGTH) {
    throw new FilterSyntaxError(FILTER_MAX_LENGTH + 1, `a filter longer than ${FILTER_MAX_LENGTH} characters`);
  }
  const tokens = tokenize(text);
  let next = 0;
  const peek = () => tokens[next]!;
  const describe = (token: Token) => (token.kind === "end" ? "the end of the filter" : JSON.stringify(token.text));
  const expect = (what: string, test: (token: Token) => boolean): Token => {
    const token = peek();
    if (!test(token)) throw new FilterSyntaxError(token.position, `expected ${what}, found ${describe(token)}`);
    next++;
    return token;
  };
  const isSymbol = (text: string) => (token: Token) => token.kind === "symbol" && token.text === text;
  const isKeyword = (text: string) => (token: Token) => token.kind === "keyword" && token.text === text;

  const chain = (kind: "and" | "or", operand: () => FilterNode): FilterNode => {
    const operands = [operand()];
    while (isKeyword(kind)(peek())) {
      next++;
      operands.push(operand());
    }
    return operands.length === 1 ? operands[0]! : { kind, operands };
  };
  const or = (): FilterNode => chain("or", and);
  const and = (): FilterNode => chain("and", unary);
  const value = () => expect("a string value", (token) => token.kind === "string").value!;
  const unary = (): FilterNode => {
    const token = peek();
    if (isKeyword("not")(token)) {
      next++;
      return { kind: "not", operand: unary() };
    }
    if (isSymbol("(")(token)) {
      next++;
      const inner = or();
      expect('")"', isSymbol(")"));
      return inner;
    }
    if (isKeyword("exists")(token)) {
      next++;
      expect('"("', isSymbol("("));
      const name = expect("an attribute name", (t) => t.kind === "name").text;
      expect('")"', isSymbol(")"));
      return { kind: "exists", name };
    }
    const name = expect('an attribute name, "not", "exists" or "("', (t) => t.kind === "name").text;
    const operator = expect('"==", "!=" or "in"', (t) => isSymbol("==")(t) || isSymbol("!=")(t) || isKeyword("in")(t));
    if (operator.text === "in") {
      expect('"["', isSymbol("["));
      const values = [value()];
      while (isSymbol(",")(peek())) {
        next++;
        values.push(value());
      }
      expect('"," or "]"', isSymbol("]"));
      return { kind: "in", name, values };
    }
    const compared: FilterNode = { kind: "eq", name, value: value() };
    return operator.text === "==" ? compared : { kind: "not", operand: compared };
  };

  const filter = or();
  expect('"and", "or" or the end of the filter', (token) => token.kind === "end");
  return filter;
}

/** The attribute names a filter reads, in the order they first appear. */
export function filterAttributes(filter: FilterNode): string[] {
  const names = new Set<string>();
  const walk = (node: FilterNode): void => {
    if (node.kind === "not") walk(node.operand);
    else if (node.kind === "and" || node.kind === "or") node.operands.forEach(walk);
    else names.add(node.name);
  };
  walk(filter);
  return [...names];
}

/**
 * The filter as an SQL/JSON path predicate over an event's attributes
 * (`attributes @@ path` in PostgreSQL). Names and values are quoted as JSON
 * strings, which a path reads the same way.
 */
export function filterPath(filter: FilterNode): string {
  const key = (name: string) => `$.${JSON.stringify(name)}`;
  const equals = (name: string, value: string) => `${key(name)} == ${JSON.stringify(value)}`;
  switch (filter.kind) {
    case "eq":
      return equals(filter.name, filter.value);
    case "in":
      return `(${filter.values.map((value) => equals(filter.name, value)).join(" || ")})`;
    case "exists":
      return `exists(${key(filter.name)} ? (@ != null))`;
    case "not":
      return `!(${filterPath(filter.operand)})`;
    case "and":
    case "or":
      return `(${filter.operands.map(filterPath).join(filter.kind === "and" ? " && " : " || ")})`;
  }
}

/**
 * Why a filter cannot apply to these event types: the first attribute it
 * names that one of them does not declare (a filter means the same thing for
 * every event its webhook hears). Undefined when every name is declared.
 */
export function undeclaredAttribute(
  filter: FilterNode,
  entries: readonly Pick<CatalogueEntry, "internal" | "attributes">[],
): string | undefined {
  for (const name of filterAttributes(filter)) {
    for (const entry of entries) {
      const declared = entry.attributes?.columns ?? [];
      if (declared.includes(name)) continue;
      const has = declared.length === 0 ? "it declares none" : `it declares ${declared.join(", ")}`;
      return `"${name}" is not an attribute of ${entry.internal} (${has}); a filter may name only attributes that every event type its webhook hears declares`;
    }
  }
  return undefined;
}
