import type { Principal } from "./jwt.ts";

// A symbol no request can carry: only code holding it can hand the API a principal.
const CONSOLE_PRINCIPAL = Symbol("hooklane console principal");

/**
 * The bindings with which the console calls the API in-process as `principal`
 * (a portal session's account, already verified by the console). A request
 * from outside never has them.
 */
export function consolePrincipalBindings(principal: Principal): Record<symbol, Principal> {
  return { [CONSOLE_PRINCIPAL]: principal };
}

/** The principal the console handed the API with this request, if it did. */
export function consolePrincipal(bindings: unknown): Principal | undefined {
  if (typeof bindings !== "object" || bindings === null) return undefined;
  return (bindings as Record<symbol, Principal | undefined>)[CONSOLE_PRINCIPAL];
}
