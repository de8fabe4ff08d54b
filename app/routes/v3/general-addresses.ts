import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { handler, jsonBody, ok, type ApiContext } from "../../../lib/api/handler.ts";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { generalAddress } from "../../../lib/db/schema.ts";

const address = z.object({
  line1: z.string().trim().min(1).max(200),
  city: z.string().trim().min(1).max(100),
  country: z
    .string()
    .regex(/^[A-Za-z]{2}$/, "must be a 2-letter ISO 3166-1 code")
    .transform((code) => code.toUpperCase()),
});

const updateAddress = address
  .partial()
  .refine((body) => Object.keys(body).length > 0, "must change at least one field");

/** General addresses belong to no account: any authenticated caller may manage them. */
export function generalAddressRoutes(): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();
  const requested = (c: ApiContext) => eq(generalAddress.id, c.req.param("id") ?? "");

  app.post(
    "/v3/general-addresses",
    handler(async (c) => {
      const input = address.parse(await jsonBody(c));
      const [row] = await c.var.database.db.insert(generalAddress).values(input).returning();
      return ok(c, row, 201);
    }),
  );

  app.patch(
    "/v3/general-addresses/:id",
    handler(async (c) => {
      const input = updateAddress.parse(await jsonBody(c));
      const [row] = await c.var.database.db.update(generalAddress).set(input).where(requested(c)).returning();
      if (!row) throw notFound("general address");
      return ok(c, row);
    }),
  );

  app.delete(
    "/v3/general-addresses/:id",
    handler(async (c) => {
      const [row] = await c.var.database.db
        .delete(generalAddress)
        .where(requested(c))
        .returning({ id: generalAddress.id });
      if (!row) throw notFound("general address");
      return ok(c, { id: row.id, deleted: true });
    }),
  );

  // Subscribers get identifiers only and read the resource back here.
  app.get(
    "/v3/general-addresses/:id",
    handler(async (c) => {
      const [row] = await c.var.database.db.select().from(generalAddress).where(requested(c));
      if (!row) throw notFound("general address");
      return c.json(row);
    }),
  );

  return app;
}
