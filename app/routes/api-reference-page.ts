import { html } from "hono/html";
import { ERROR_TYPES } from "../../lib/api/error-types.ts";
import { inlineStyle } from "../inline-style.ts";
import { verifySignatureGuide } from "./verify-signature-guide.ts";

/** The reference page's one stylesheet, inline; the CSP allows exactly this text by its hash. */
export const REFERENCE_STYLE = inlineStyle(`
body {
  font:
    15px/1.5 system-ui,
    sans-serif;
  margin: 0;
  padding: 0 1rem;
  color: #1b1b1b;
}
a {
  color: #0b57a4;
}
.skip {
  position: absolute;
  left: -999px;
}
.skip:focus {
  left: 1rem;
  top: 0.5rem;
  background: #fff;
}
.page {
  display: grid;
  grid-template-columns: 17rem minmax(0, 1fr);
  gap: 2rem;
  max-width: 82rem;
  margin: 0 auto;
}
.toc {
  position: sticky;
  top: 0;
  align-self: start;
  max-height: 100vh;
  overflow-y: auto;
  padding: 1rem 0;
  font-size: 14px;
}
.toc ul {
  list-style: none;
  padding-left: 0;
  margin: 0;
}
.toc li {
  margin: 0.15rem 0;
}
.toc .ops {
  padding-left: 0.8rem;
  font-size: 13px;
}
main {
  min-width: 0;
  padding-bottom: 3rem;
}
td code,
p code {
  overflow-wrap: anywhere;
}
.fields td:first-child {
  white-space: nowrap;
}
@media (max-width: 900px) {
  .page {
    display: block;
  }
  .toc {
    position: static;
    max-height: none;
    border-bottom: 1px solid #ddd;
  }
  .toc .ops {
    display: none;
  }
  .fields td:first-child {
    white-space: normal;
  }
}
code,
pre {
  font:
    13px/1.4 ui-monospace,
    monospace;
}
pre {
  background: #f5f5f5;
  padding: 0.6rem;
  white-space: pre-wrap;
  overflow-wrap: anywhere;
}
table {
  border-collapse: collapse;
  margin: 0.5rem 0;
}
td,
th {
  border: 1px solid #ddd;
  padding: 0.2rem 0.5rem;
  text-align: left;
  vertical-align: top;
}
.op {
  border-top: 1px solid #ddd;
  padding-top: 0.5rem;
}
.method {
  font-weight: bold;
  padding: 0 0.4rem;
  border-radius: 3px;
  color: #fff;
  background: #555;
}
.get {
  background: #2f6f9f;
}
.post {
  background: #1e6b37;
}
.patch {
  background: #77580f;
}
.delete {
  background: #9f2f2f;
}
.event {
  background: #5f3f8f;
}
summary {
  cursor: pointer;
}
@media (max-width: 640px) {
  table,
  tbody,
  tr,
  td,
  th {
    display: block;
  }
}
`);

type Json = Record<string, any>;

const REF_PREFIX = "#/components/schemas/";

/** A code span for a constant value, as JSON writes it. */
const literal = (value: unknown) => html`<code>${JSON.stringify(value)}</code>`;

/** What a schema accepts, in words: a type, a link to a named schema, the values it allows. */
function typeOf(schema: Json | undefined): unknown {
  if (!schema || Object.keys(schema).length === 0) return "any";
  if (schema.$ref) {
    const name = String(schema.$ref).slice(REF_PREFIX.length);
    return html`<a href="#schema-${name}">${name}</a>`;
  }
  if ("const" in schema) return html`always ${literal(schema.const)}`;
  if (schema.enum)
    return html`one of ${schema.enum.map((v: unknown, i: number) => html`${i ? ", " : ""}${literal(v)}`)}`;
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return union.map((branch: Json, i: number) => html`${i ? " or " : ""}${typeOf(branch)}`);
  if (schema.allOf) return schema.allOf.map((part: Json, i: number) => html`${i ? " and " : ""}${typeOf(part)}`);
  const type = Array.isArray(schema.type) ? schema.type.join(" or ") : schema.type;
  if (type === "array") return html`array of ${typeOf(schema.items)}`;
  if (schema.format === "date-time") return "timestamp (ISO-8601 UTC)";
  if (type === "object" && !schema.properties && schema.additionalProperties) {
    return html`map of ${typeOf(schema.additionalProperties)}`;
  }
  const bounds = [
    schema.minimum !== undefined ? `≥ ${schema.minimum}` : "",
    schema.maximum !== undefined ? `≤ ${schema.maximum}` : "",
    schema.maxLength !== undefined ? `up to ${schema.maxLength} characters` : "",
  ].filter(Boolean);
  return `${type ?? "any"}${bounds.length ? `, ${bounds.join(", ")}` : ""}`;
}

/** The object a property describes inline (not a named schema), if any: its own fields become rows. */
function inlineObject(schema: Json | undefined): Json | undefined {
  if (!schema || schema.$ref) return undefined;
  if (schema.properties) return schema;
  if (schema.type === "array") return inlineObject(schema.items);
  const union: Json[] | undefined = schema.anyOf ?? schema.oneOf;
  const objects = union?.filter((branch) => branch.type !== "null");
  return objects?.length === 1 ? inlineObject(objects[0]) : undefined;
}

/** One row per field, nested fields as `parent.child` (`parent[].child` inside arrays). */
function fieldRows(schema: Json, prefix: string): unknown[] {
  const required = new Set<string>(schema.required ?? []);
  return Object.entries((schema.properties ?? {}) as Json).flatMap(([name, property]) => {
    const path = `${prefix}${name}`;
    const nested = inlineObject(property);
    const inArray = property.type === "array" || (property.anyOf ?? []).some((b: Json) => b.type === "array");
    return [
      html`<tr>
        <td><code>${path}</code>${required.has(name) ? "" : html` <small>optional</small>`}</td>
        <td>${nested ? (inArray ? "array of objects" : "object") : typeOf(property)}</td>
        <td>${prose(property.description ?? property.items?.description)}</td>
      </tr>`,
      ...(nested ? fieldRows(nested, `${path}${inArray ? "[]" : ""}.`) : []),
    ];
  });
}

/** A JSON Schema as people read it: a table of its fields (name, type, description), named schemas linked. */
function schemaTable(schema: Json) {
  const parts: Json[] = schema.allOf ?? [schema];
  const refs = parts.filter((part) => part.$ref);
  const objects = parts.map((part) => inlineObject(part)).filter((part): part is Json => part !== undefined);
  return html`${refs.length ? html`<p>${refs.map((ref, i) => html`${i ? " and " : ""}${typeOf(ref)}`)}${objects.length ? ", with:" : ""}</p>` : ""}
  ${
    objects.length
      ? html`<table class="fields">
          <tr>
            <th scope="col">field</th>
            <th scope="col">type</th>
            <th scope="col">description</th>
          </tr>
          ${objects.flatMap((object) => fieldRows(object, ""))}
        </table>`
      : refs.length
        ? ""
        : html`<p>${typeOf(schema)}</p>`
  }`;
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

/** Prose from the document: its `code` spans set as code, everything else as text. */
function prose(text: string | undefined) {
  // split() on a capture group alternates text and the spans' insides.
  return (text ?? "").split(/`([^`]+)`/).map((part, i) => (i % 2 ? html`<code>${part}</code>` : part));
}
const shellQuote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/** The operation as a curl command, with its example body. */
function curlExample(path: string, method: string, operation: Json): string {
  const example = operation.requestBody?.content?.["application/json"]?.example;
  const lines = [
    `curl -X ${method.toUpperCase()} "$HOOKLANE_API${path.replace(/\{([A-Za-z0-9_]+)\}/g, "<$1>")}"`,
    `  -H "Authorization: Bearer $HOOKLANE_TOKEN"`,
    ...(example === undefined
      ? []
      : [`  -H "Content-Type: application/json"`, `  -d ${shellQuote(JSON.stringify(example))}`]),
  ];
  return lines.join(" \\\n");
}

/** The first successful answer and its example. */
function responseExample(operation: Json) {
  const [status, response] = Object.entries(operation.responses as Json).find(([code]) => code.startsWith("2")) ?? [];
  if (!status) return "";
  const media = response.content?.["application/json"] ?? response.content?.["text/event-stream"];
  const example = response.content?.["application/json"]?.example;
  return html`<h4>Example response</h4>
    <pre class="example-response">
HTTP ${status}${media ? "" : " (no body)"}${example === undefined ? "" : `\n\n${json(example)}`}${
        response.content?.["text/event-stream"] ? "\n\n(a text/event-stream of deliveries)" : ""
      }</pre>`;
}

function operationBlock(path: string, method: string, operation: Json) {
  const parameters: Json[] = operation.parameters ?? [];
  const body = operation.requestBody?.content?.["application/json"]?.schema;
  return html`<section class="op" id="${operation.operationId}">
    <h3><span class="method ${method}">${method.toUpperCase()}</span> <code>${path}</code></h3>
    <p><strong>${operation.summary}</strong>${operation.description ? html` — ${prose(operation.description)}` : ""}</p>
    ${
      parameters.length
        ? html`<table>
            <tr>
              <th>parameter</th>
              <th>in</th>
              <th>required</th>
              <th>schema</th>
              <th>description</th>
            </tr>
            ${parameters.map(
              (p) =>
                html`<tr>
                  <td><code>${p.name}</code></td>
                  <td>${p.in}</td>
                  <td>${p.required ? "yes" : "no"}</td>
                  <td>${typeOf(p.schema)}</td>
                  <td>${prose(p.description)}</td>
                </tr>`,
            )}
          </table>`
        : ""
    }
    <h4>Example request</h4>
    <pre class="example-request">${curlExample(path, method, operation)}</pre>
    ${responseExample(operation)}
    ${
      body
        ? html`<details>
            <summary>Request body (application/json)</summary>
            ${schemaTable(body)}
          </details>`
        : ""
    }
    <h4>Responses</h4>
    <ul>
      ${Object.entries(operation.responses as Json).map(([status, response]) => {
        const [type, media] = Object.entries((response.content ?? {}) as Json)[0] ?? [];
        return html`<li>
          <code>${status}</code>
          ${prose(response.description)}${type ? html` <em>${type}</em>` : ""}${
            media
              ? html`<details>
                  <summary>Fields</summary>
                  ${schemaTable(media.schema)}
                </details>`
              : ""
          }
        </li>`;
      })}
    </ul>
  </section>`;
}

/** One event type (an OpenAPI `webhooks` entry): what is POSTed, its payload schema and example. */
function eventBlock(type: string, entry: Json) {
  const operation = entry.post;
  const content = operation.requestBody.content["application/json"];
  return html`<section class="op" id="event-${type}">
    <h3><span class="method event">EVENT</span> <code>${type}</code>${operation.deprecated ? " (deprecated)" : ""}</h3>
    <p>${prose(operation.description)}</p>
    <h4>Payload</h4>
    <div class="payload-schema">${schemaTable(content.schema)}</div>
    <h4>Example payload</h4>
    <pre class="example-payload">${json(content.example)}</pre>
  </section>`;
}

function errorTypes() {
  return html`<h2 id="errors">Errors</h2>
    <p>
      Every error is <code>application/problem+json</code> (RFC 9457): branch on <code>type</code> or <code>code</code>,
      never on <code>title</code> or <code>detail</code>, which are for people.
    </p>
    <table>
      <tr>
        <th>status</th>
        <th>code</th>
        <th>type</th>
        <th>when</th>
      </tr>
      ${ERROR_TYPES.map(
        (kind) =>
          html`<tr id="error-${kind.code}">
            <td>${kind.status}</td>
            <td><code>${kind.code}</code></td>
            <td><code>${kind.type}</code></td>
            <td>${prose(kind.description)}</td>
          </tr>`,
      )}
    </table>`;
}

/** How to call the API at all: where it is, a token, and what a delivery promises. */
function gettingStarted() {
  return html`<h2 id="getting-started">Getting started</h2>
    <p>
      The examples read two variables, as <code>hooklane listen</code> does: <code>HOOKLANE_API</code>, where the API is
      (<code>http://localhost:3000</code> after <code>npm start</code>), and <code>HOOKLANE_TOKEN</code>, a bearer JWT
      with claims <code>sub</code> and <code>account</code> (and <code>role: admin</code> or <code>support</code> where
      an operation says so). On a development server, <code>npm run token -- --account acc_123</code> prints one signed
      with the development secret; in production your identity provider issues them (HS256 with
      <code>AUTH_JWT_SECRET</code>, or keys from a JWKS URL).
    </p>
    <pre>
export HOOKLANE_API=http://localhost:3000
export HOOKLANE_TOKEN=$(npm run -s token -- --account acc_123)</pre>
    <p>
      Deliveries are at least once: the same event <code>id</code> (in the body, and in <code>Hooklane-Event-Id</code>)
      and the byte-identical body on every attempt, so dedupe on the body's <code>id</code>. A delivery not answered
      <code>2xx</code> within 10 s is retried after 5 s, 30 s, 5 min, 1 h and 24 h (six attempts over about 25 hours,
      each delay ±10 %, never sooner than a <code>Retry-After</code>), then marked exhausted and its owner told.
    </p>`;
}

/** The OpenAPI document as a self-contained reference page: no scripts, nothing fetched. */
export function renderApiReference(document: Json) {
  type Entry = { id: string; method: string; summary: string; block: ReturnType<typeof operationBlock> };
  const byTag = new Map<string, Entry[]>();
  for (const [path, methods] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(methods as Json)) {
      const tag: string = operation.tags?.[0] ?? "Other";
      const entry = {
        id: operation.operationId,
        method,
        summary: operation.summary,
        block: operationBlock(path, method, operation),
      };
      byTag.set(tag, [...(byTag.get(tag) ?? []), entry]);
    }
  }
  const tagDescriptions = new Map<string, string>(
    ((document.tags ?? []) as Json[]).map((tag) => [tag.name, tag.description]),
  );
  const links = (entries: Array<{ id: string; label: unknown }>) =>
    html`<ul class="ops">
      ${entries.map((e) => html`<li><a href="#${e.id}">${e.label}</a></li>`)}
    </ul>`;
  const operationLinks = (entries: Entry[]) =>
    links(entries.map((e) => ({ id: e.id, label: html`<code>${e.method.toUpperCase()}</code> ${e.summary}` })));
  const schemas = Object.entries((document.components?.schemas ?? {}) as Json);
  const events = Object.entries((document.webhooks ?? {}) as Json);
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${document.info.title} — API reference</title>
        ${REFERENCE_STYLE.element}
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <div class="page">
          <nav class="toc" aria-label="Contents">
            <ul>
              <li><a href="#getting-started">Getting started</a></li>
              ${[...byTag.entries()].map(
                ([tag, entries]) => html`<li><a href="#tag-${tag}">${tag}</a> ${operationLinks(entries)}</li>`,
              )}
              <li>
                <a href="#events">Events</a>
                ${links(events.map(([type]) => ({ id: `event-${type}`, label: html`<code>${type}</code>` })))}
              </li>
              <li><a href="#errors">Errors</a></li>
              <li><a href="#verify-a-signature">Verify a signature</a></li>
              <li>
                <a href="#schemas">Schemas</a>
                ${links(schemas.map(([name]) => ({ id: `schema-${name}`, label: name })))}
              </li>
            </ul>
          </nav>
          <main id="main">
            <h1>${document.info.title} <small>${document.info.version}</small></h1>
            <p>${prose(document.info.description)}</p>
            <p>
              Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${document.openapi}). Errors are
              <code>application/problem+json</code>.
            </p>
            ${gettingStarted()}
            ${[...byTag.entries()].map(
              ([tag, entries]) =>
                html`<h2 id="tag-${tag}">${tag}</h2>
                  ${tagDescriptions.has(tag) ? html`<p>${prose(tagDescriptions.get(tag))}</p>` : ""}
                  ${entries.map((e) => e.block)}`,
            )}
            <h2 id="events">Events</h2>
            <p>
              What the API POSTs to your endpoints (OpenAPI <code>webhooks</code>), one entry per event type of the
              catalogue, and the test event. Bodies are thin: fetch the resource by <code>data.id</code> for its current
              state.
            </p>
            ${events.map(([type, entry]) => eventBlock(type, entry))} ${errorTypes()} ${verifySignatureGuide()}
            <h2 id="schemas">Schemas</h2>
            ${schemas.map(
              ([name, schema]) =>
                html`<section class="op" id="schema-${name}">
                  <h3>${name}</h3>
                  ${schema.description ? html`<p>${prose(schema.description)}</p>` : ""} ${schemaTable(schema)}
                </section>`,
            )}
          </main>
        </div>
      </body>
    </html>`;
}
