import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { handler, jsonBody, ok, type ApiContext } from "../../../lib/api/handler.ts";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { ApiError, notFound } from "../../../lib/api/problem.ts";
import { account } from "../../../lib/db/schema.ts";

const createAccount = z.object({
  name: z.string().trim().min(1).max(200),
  email: z.email().optional(),
  /** An admin may choose the id, e.g. to mirror the account of another system. */
  id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, '_' or '-'")
    .optional(),
});

const updateAccount = z
  .object({ name: z.string().trim().min(1).max(200), email: z.email().nullable() })
  .partial()
  .refine((body) => Object.keys(body).length > 0, "must change at least one field");

/** Accounts: only admins create them; an account may read and update itself, an admin any. */
export function accountRoutes(): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();

  app.post(
    "/v3/accounts",
    handler(async (c) => {
      if (!c.var.principal.admin) throw new ApiError(403, "Forbidden", "Only an admin can create accounts.");
      const input = createAccount.parse(await jsonBody(c));
      const [row] = await c.var.database.db.insert(account).values(input).onConflictDoNothing().returning();
      if (!row) throw new ApiError(409, "Conflict", `An account with id ${input.id} already exists.`);
      return ok(c, row, 201);
    }),
  );

  app.patch(
    "/v3/accounts/:id",
    handler(async (c) => {
      const id = visibleAccountId(c);
      const input = updateAccount.parse(await jsonBody(c));
      const [row] = await c.var.database.db.update(account).set(input).where(eq(account.id, id)).returning();
      if (!row) throw notFound("account");
      return ok(c, row);
    }),
  );

  app.get(
    "/v3/accounts/:id",
    handler(async (c) => {
      const [row] = await c.var.database.db
        .select()
        .from(account)
        .where(eq(account.id, visibleAccountId(c)));
      if (!row) throw notFound("account");
      return c.json(row);
    }),
  );

  return app;
}

/** The `:id` the caller may touch: any for an admin, only its own otherwise (404, not 403). */
function visibleAccountId(c: ApiContext): string {
  const id = c.req.param("id") ?? "";
  const { principal } = c.var;
  if (!principal.admin && id !== principal.account) throw notFound("account");
  return id;
}
