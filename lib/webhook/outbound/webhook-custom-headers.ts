import { z } from "zod";
import type { SecretSealer } from "./webhook-secret-seal.ts";

/**
 * A webhook's own headers, sent on every attempt: static values a receiver
 * behind an API gateway needs (`X-Api-Key`, `Authorization`). A value marked
 * secret is sealed at rest like the signing secret and never shown again; the
 * others are stored and shown as they are. Nothing signs them.
 */

/** At most this many per webhook, and this many bytes of names and values together (receivers cap a request's). */
export const MAX_CUSTOM_HEADERS = 20;
export const MAX_CUSTOM_HEADER_BYTES = 8_192;

/** Names the request itself, the connection or a proxy own, and what a signature or trace is carried in. */
const REFUSED_NAMES = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "forwarded",
  "via",
  "max-forwards",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "expect",
  "user-agent",
  "traceparent",
  "tracestate",
]);

/** As stored: a plain value, or a secret one sealed. */
export type StoredHeader = { value: string } | { sealed: string };
export type StoredHeaders = Record<string, StoredHeader>;

/** A secret's place in answers, and in an update: `{"secret": true}` keeps the stored value. */
const SECRET_KEPT = { secret: true } as const;

// RFC 9110 token: the characters a field name may have.
const headerName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, "a header name is letters, digits and !#$%&'*+.^_`|~-");
// Visible ASCII and inner spaces: nothing that could end the header or start another.
const headerValue = z
  .string()
  .min(1)
  .max(4_096)
  .regex(/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/, "a header value is visible ASCII, inner spaces allowed");

const HEADERS =
  'Headers sent on every attempt, by name: a value as it is, or `{"value": "…", "secret": true}` for one kept encrypted and never shown again (answers show `{"secret": true}`). At most 20 and 8,192 bytes; not `Host`, `Content-*`, hop-by-hop, proxy (`Forwarded`, `Via`, `X-Forwarded-*`, …), `User-Agent`, trace or signature headers (`webhook-*`, `<Brand>-*`). Nothing signs them.';

/** `headers` in a create or an update body. In an update, `{"secret": true}` keeps that secret's stored value. */
export const customHeadersInput = z
  .record(
    headerName,
    z.union([
      headerValue,
      z.strictObject({
        value: headerValue.optional().describe("The value; omitted in an update, the stored one is kept."),
        secret: z.literal(true).describe('Kept encrypted; answers show `{"secret": true}` instead.'),
      }),
    ]),
  )
  .describe(HEADERS);

/** `headers` in an answer: plain values as they are, each secret as `{"secret": true}`. */
export const customHeadersOutput = z
  .record(z.string(), z.union([z.string(), z.strictObject({ secret: z.literal(true) })]))
  .describe(HEADERS);

export type CustomHeadersInput = z.output<typeof customHeadersInput>;

/** Why `name` cannot be a webhook's header (null: it can), for the brand signatures are sent under. */
export function headerNameRefusal(name: string, brand: string): string | null {
  const lower = name.toLowerCase();
  if (REFUSED_NAMES.has(lower)) return `${name} is set by the request itself`;
  if (lower.startsWith("content-")) return `${name}: the body's headers are the delivery's own`;
  if (lower.startsWith("x-forwarded-")) return `${name} is a proxy's to set`;
  if (lower.startsWith("webhook-") || lower.startsWith(`${brand.toLowerCase()}-`)) {
    return `${name}: signature and event headers are the delivery's own`;
  }
  return null;
}

/** Where a `headers` input is refused: the field and why (names compared without case), or null. */
export function customHeadersRefusal(
  input: CustomHeadersInput,
  brand: string,
  stored: StoredHeaders = {},
): { field: string; message: string } | null {
  const names = Object.keys(input);
  if (names.length > MAX_CUSTOM_HEADERS) {
    return { field: "headers", message: `at most ${MAX_CUSTOM_HEADERS} headers (${names.length} given)` };
  }
  const bytes = names.reduce((sum, name) => {
    const given = input[name]!;
    return sum + name.length + (typeof given === "string" ? given.length : (given.value?.length ?? 0));
  }, 0);
  if (bytes > MAX_CUSTOM_HEADER_BYTES) {
    return {
      field: "headers",
      message: `at most ${MAX_CUSTOM_HEADER_BYTES} bytes of names and values (${bytes} given)`,
    };
  }
  const seen = new Set<string>();
  for (const name of names) {
    const refusal = headerNameRefusal(name, brand);
    if (refusal) return { field: `headers.${name}`, message: refusal };
    if (seen.has(name.toLowerCase())) return { field: `headers.${name}`, message: `${name} is given twice` };
    seen.add(name.toLowerCase());
    const given = input[name]!;
    if (typeof given === "object" && given.value === undefined && !("sealed" in (headerNamed(stored, name) ?? {}))) {
      return { field: `headers.${name}`, message: `${name} has no stored secret to keep: give its value` };
    }
  }
  return null;
}

/** What to store for `input`: secrets sealed; a secret given without a value keeps `stored`'s. */
export async function sealHeaders(
  input: CustomHeadersInput,
  sealer: SecretSealer,
  stored: StoredHeaders = {},
): Promise<StoredHeaders> {
  const out: StoredHeaders = {};
  for (const [name, given] of Object.entries(input)) {
    if (typeof given === "string") out[name] = { value: given };
    else if (given.value !== undefined) out[name] = { sealed: await sealer.seal(given.value) };
    else out[name] = headerNamed(stored, name)!;
  }
  return out;
}

/** `name`'s entry in a set of headers, its case aside. */
export function headerNamed<T>(headers: Readonly<Record<string, T>>, name: string): T | undefined {
  const lower = name.toLowerCase();
  return Object.entries(headers).find(([given]) => given.toLowerCase() === lower)?.[1];
}

/** A webhook's headers as answers show them: each secret as `{"secret": true}`. */
export function presentHeaders(stored: StoredHeaders): z.output<typeof customHeadersOutput> {
  return Object.fromEntries(
    Object.entries(stored).map(([name, header]) => [name, "value" in header ? header.value : SECRET_KEPT]),
  );
}

/**
 * The headers to send, secrets unsealed, but for a name refused now (the brand may have changed since it was
 * stored); and the secret values among them, which what a subscriber answers must not be recorded with. Throws when
 * one does not unseal.
 */
export async function openHeaders(
  stored: StoredHeaders | null | undefined,
  sealer: SecretSealer,
  brand: string,
): Promise<{ headers: Record<string, string>; secrets: string[] }> {
  const headers: Record<string, string> = {};
  const secrets: string[] = [];
  for (const [name, header] of Object.entries(stored ?? {})) {
    if (headerNameRefusal(name, brand) !== null) continue;
    if ("value" in header) headers[name] = header.value;
    else secrets.push((headers[name] = await sealer.unseal(header.sealed)));
  }
  return { headers, secrets };
}
