import type { Hono } from "hono";
import { z } from "zod";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import {
  KEY_ROTATION_GRACES,
  keysPagePath,
  rotatedNotice,
  signingKeysPage,
  type KeyScope,
  type SigningKey,
} from "./console-signing-key-pages.ts";
import type { ConsoleTools } from "./console-tools.ts";

const PAGE_SIZE = 50;

const scopeField = z.enum(["account", "global"]).default("account");

// One of the offered graces, exactly: a blank or odd value must not become 0. Absent: the API's default (none with
// `immediate`). `immediate` is the leaked-key form's, which sends no grace.
const rotateForm = z.object({
  scope: scopeField,
  grace: z
    .enum(KEY_ROTATION_GRACES.map(([seconds]) => String(seconds)))
    .transform(Number)
    .optional(),
  immediate: z.literal("true").optional(),
});

/**
 * The ed25519 signing keys (`v1a`): the caller's account's keys (an admin's `?scope=global`: the global webhooks'),
 * with each one's state and the public key set's address, and rotating them, planned with a grace or at once for a
 * leaked key. Read and rotated through the API as the caller, so its scoping holds: a portal session sees its own
 * account's keys only.
 */
export function addSigningKeyConsoleRoutes(app: Hono<HooklaneEnv>, prefix: string, tools: ConsoleTools): void {
  const { call, context, signIn, refused, badForm } = tools;
  const keysQuery = (scope: KeyScope, cursor?: string) =>
    `/v3/webhook-signing-keys?${new URLSearchParams({ scope, limit: String(PAGE_SIZE), ...(cursor ? { cursor } : {}) })}`;

  app.get(`${prefix}/signing-keys`, async (c) => {
    const { scope: sent, cursor, notice } = c.req.query();
    const scope = scopeField.safeParse(sent);
    if (!scope.success) return badForm(c, "There are keys of an account and of the global webhooks only.");
    // An older page: the first one too, where the key that signs is.
    const [list, first] = await Promise.all([
      call(c, "GET", keysQuery(scope.data, cursor)),
      cursor ? call(c, "GET", keysQuery(scope.data)) : undefined,
    ]);
    if (!list) return signIn(c);
    if (!list.ok) return refused(c, list);
    const keys: SigningKey[] = list.body.data;
    return c.html(
      signingKeysPage({
        scope: scope.data,
        keys,
        newest: first?.ok ? [...first.body.data, ...keys] : keys,
        nextCursor: list.body.nextCursor,
        cursor,
        origin: new URL(c.req.url).origin,
        notice,
        context: context(c),
      }),
    );
  });

  app.post(`${prefix}/signing-keys/rotate`, async (c) => {
    const form = rotateForm.safeParse(await c.req.parseBody());
    if (!form.success) return badForm(c, "Choose one of the offered grace periods.");
    const { scope, grace, immediate } = form.data;
    const rotated = await call(c, "POST", "/v3/webhook-signing-keys/rotate", {
      scope,
      ...(grace === undefined ? {} : { grace }),
      ...(immediate ? { immediate: true } : {}),
    });
    if (!rotated) return signIn(c);
    if (!rotated.ok) return refused(c, rotated);
    // Read again: until when the replaced keys stay is what the rotation left, a key already leaving sooner included.
    const after = await call(c, "GET", keysQuery(scope));
    const notice = rotatedNotice(rotated.body, after?.ok ? after.body.data : undefined);
    return c.redirect(keysPagePath(context(c).base, scope, `notice=${encodeURIComponent(notice)}`), 303);
  });
}
