import { html } from "hono/html";
import { inlineStyle } from "../inline-style.ts";

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
  overflow-x: auto;
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
  background: #2f8f4f;
}
.patch {
  background: #9f7f2f;
}
.delete {
  background: #9f2f2f;
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

function operationBlock(path: string, method: string, operation: Json) {
  const parameters: Json[] = operation.parameters ?? [];
  const body = operation.requestBody?.content?.["application/json"]?.schema;
  return html`<section class="op" id="${operation.operationId}">
    <h3><span class="method ${method}">${method.toUpperCase()}</span> <code>${path}</code></h3>
    <p><strong>${operation.summary}</strong>${operation.description ? html` — ${operation.description}` : ""}</p>
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
                  <td>${p.description ?? ""}</td>
                </tr>`,
            )}
          </table>`
        : ""
    }
    ${
      body
        ? html`<h4>Request body (application/json)</h4>
            ${schemaBlock(body)}`
        : ""
    }
    <h4>Responses</h4>
    <ul>
      ${Object.entries(operation.responses as Json).map(([status, response]) => {
        const [type, media] = Object.entries((response.content ?? {}) as Json)[0] ?? [];
        return html`<li>
          <code>${status}</code>
          ${response.description}${type ? html` <em>${type}</em>` : ""}${media ? schemaBlock(media.schema) : ""}
        </li>`;
      })}
    </ul>
  </section>`;
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
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>${document.info.title} — API reference</title>
        ${REFERENCE_STYLE.element}
      </head>
      <body>
        <h1>${document.info.title} <small>${document.info.version}</small></h1>
        <p>${document.info.description}</p>
        <p>
          Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${document.openapi}). Errors are
          <code>application/problem+json</code>.
        </p>
        <nav>
          <ul>
            ${[...byTag.keys()].map((tag) => html`<li><a href="#tag-${tag}">${tag}</a></li>`)}
            <li><a href="#schemas">Schemas</a></li>
          </ul>
        </nav>
        ${[...byTag.entries()].map(
          ([tag, blocks]) =>
            html`<h2 id="tag-${tag}">${tag}</h2>
              ${blocks}`,
        )}
        <h2 id="schemas">Schemas</h2>
        ${schemas.map(
          ([name, schema]) =>
            html`<h3 id="schema-${name}">${name}</h3>
              ${schemaBlock(schema)}`,
        )}
      </body>
    </html>`;
}
