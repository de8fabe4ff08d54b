import { html } from "hono/html";
import { layout, tokenField, type PageContext } from "./console-layout.ts";

export function loginPage(csrf: string, error?: string) {
  return layout(
    "Sign in",
    html`<form method="post" action="/console/login">
      ${tokenField(csrf)} ${error ? html`<p class="warning" role="alert">${error}</p>` : ""}
      <div class="field">
        <label for="token">API bearer token</label>
        <textarea id="token" name="token" rows="4" required aria-describedby="token-help"></textarea>
        <small id="token-help"
          >Paste a token your API issued (<code>npm run token</code> mints one for development).</small
        >
      </div>
      <p><button>Sign in</button></p>
    </form>`,
    { signedIn: false, csrf, base: "/console" },
  );
}

/** An API refusal (404, 409, 422…), shown with the API's own words. */
export function problemPage(title: string, detail: string, context: PageContext) {
  const base = context.base;
  return layout(
    title,
    html`<p>${detail}</p>
      <p><a href="${base}">Back to the webhooks</a></p>`,
    { signedIn: true, ...context },
  );
}
