import type { Context } from "hono";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import type { Principal } from "../../lib/auth/jwt.ts";
import { formToken } from "./console-csrf.ts";
import type { PageContext } from "./console-layout.ts";
import { problemPage } from "./console-pages.ts";

/** Calls the app's own API in-process: with a bearer token in `init`, or as a principal the console verified. */
export type ApiCaller = (path: string, init: RequestInit, principal?: Principal) => Promise<Response>;

/** An API answer as the console reads it. */
export interface ApiAnswer {
  ok: boolean;
  status: number;
  // The API's answers are validated by its own tests; here they are only displayed.
  body: any;
  /** The answer's headers (`Retry-After` of a 429, say). */
  headers: Headers;
}

/** A rendered page (hono renders some asynchronously). */
export type Page = Response | Promise<Response>;

/** What every console route works with: the API as the signed-in caller, and the usual answers. */
export interface ConsoleTools {
  /** One API call as the caller; `undefined` when there is none or it no longer works (signed out, session ended). */
  call(c: Context<HooklaneEnv>, method: string, path: string, body?: unknown): Promise<ApiAnswer | undefined>;
  context(c: Context<HooklaneEnv>): PageContext;
  signIn(c: Context<HooklaneEnv>): Page;
  refused(c: Context<HooklaneEnv>, answer: ApiAnswer): Page;
  badForm(c: Context<HooklaneEnv>, detail: string): Page;
}

/** One API call in-process as `principal`, JSON in and out. */
export async function callApiAs(
  api: ApiCaller,
  principal: Principal,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  const json =
    body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  return apiAnswer(await api(path, { method, ...json }, principal));
}

/** The answer of an API call, parsed. */
export async function apiAnswer(response: Response): Promise<ApiAnswer> {
  const text = await response.text();
  return {
    ok: response.ok,
    status: response.status,
    body: text ? JSON.parse(text) : undefined,
    headers: response.headers,
  };
}

/** The usual answers of a console, for pages under `base(c)`. */
export function pageAnswers(base: (c: Context<HooklaneEnv>) => string, portal: boolean) {
  const context = (c: Context<HooklaneEnv>): PageContext => ({ csrf: formToken(c), base: base(c), portal });
  return {
    context,
    refused: (c: Context<HooklaneEnv>, answer: ApiAnswer) =>
      c.html(problemPage(answer.body?.title ?? "Error", answer.body?.detail ?? "", context(c)), answer.status as 400),
    badForm: (c: Context<HooklaneEnv>, detail: string) => c.html(problemPage("Bad request", detail, context(c)), 400),
  };
}
