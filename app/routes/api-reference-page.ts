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
  max-width: 60rem;
  margin: 2rem auto;
  padding: 0 1rem;
  color: #1b1b1b;
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

const REF = /"#\/components\/schemas\/([A-Za-z0-9_]+)"/;

/** A JSON Schema as indented JSON, each `$ref` a link to the schema it names. */
function schemaBlock(schema: unknown) {
  const parts = JSON.stringify(schema, null, 2).split(REF);
  // split() with a capture group alternates text and referenced names.
  return html`<pre>${parts.map((part, i) => (i % 2 ? html`<a href="#schema-${part}">"${part}"</a>` : part))}</pre>`;
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
                  <td><code>${JSON.stringify(p.schema)}</code></td>
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
            <summary>Request body schema (application/json)</summary>
            ${schemaBlock(body)}
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
                  <summary>Schema</summary>
                  ${schemaBlock(media.schema)}
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
    <h4>Payload schema</h4>
    ${schemaBlock(content.schema)}
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

/** The OpenAPI document as a self-contained reference page: no scripts, nothing fetched. */
export function renderApiReference(document: Json) {
  const byTag = new Map<string, ReturnType<typeof operationBlock>[]>();
  for (const [path, methods] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(methods as Json)) {
      const tag: string = operation.tags?.[0] ?? "Other";
      byTag.set(tag, [...(byTag.get(tag) ?? []), operationBlock(path, method, operation)]);
    }
  }
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
        <h1>${document.info.title} <small>${document.info.version}</small></h1>
        <p>${prose(document.info.description)}</p>
        <p>
          Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${document.openapi}). Errors are
          <code>application/problem+json</code>.
        </p>
        <h2 id="getting-started">Getting started</h2>
        <p>
          The examples read two variables, as <code>hooklane listen</code> does: <code>HOOKLANE_API</code>, where the
          API is (<code>http://localhost:3000</code> after <code>npm start</code>), and <code>HOOKLANE_TOKEN</code>, a
          bearer JWT with claims <code>sub</code> and <code>account</code> (and <code>role: admin</code> or
          <code>support</code> where an operation says so). On a development server,
          <code>npm run token -- --account acc_123</code> prints one signed with the development secret; in production
          your identity provider issues them (HS256 with <code>AUTH_JWT_SECRET</code>, or keys from a JWKS URL).
        </p>
        <pre>
export HOOKLANE_API=http://localhost:3000
export HOOKLANE_TOKEN=$(npm run -s token -- --account acc_123)</pre>
        <p>
          Deliveries are at least once: the same event <code>id</code> (in the body, and in
          <code>Hooklane-Event-Id</code>) and the byte-identical body on every attempt, so dedupe on the body's
          <code>id</code>. A delivery not answered <code>2xx</code> within 10 s is retried after 5 s, 30 s, 5 min, 1 h
          and 24 h (six attempts over about 25 hours, each delay ±10 %, never sooner than a <code>Retry-After</code>),
          then marked exhausted and its owner told.
        </p>
        <nav>
          <ul>
            <li><a href="#getting-started">Getting started</a></li>
            ${[...byTag.keys()].map((tag) => html`<li><a href="#tag-${tag}">${tag}</a></li>`)}
            <li><a href="#events">Events</a></li>
            <li><a href="#errors">Errors</a></li>
            <li><a href="#verify-a-signature">Verify a signature</a></li>
            <li><a href="#schemas">Schemas</a></li>
          </ul>
        </nav>
        ${[...byTag.entries()].map(
          ([tag, blocks]) =>
            html`<h2 id="tag-${tag}">${tag}</h2>
              ${blocks}`,
        )}
        <h2 id="events">Events</h2>
        <p>
          What the API POSTs to your endpoints (OpenAPI <code>webhooks</code>), one entry per event type of the
          catalogue. Bodies are thin: fetch the resource by <code>data.id</code> for its current state.
        </p>
        ${events.map(([type, entry]) => eventBlock(type, entry))} ${errorTypes()} ${verifySignatureGuide()}
        <h2 id="schemas">Schemas</h2>
        ${schemas.map(
          ([name, schema]) =>
            html`<h3 id="schema-${name}">${name}</h3>
              ${schemaBlock(schema)}`,
        )}
      </body>
    </html>`;
}
