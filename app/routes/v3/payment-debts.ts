import { desc } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { handler, jsonBody, ok } from "../../../lib/api/handler.ts";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { paymentDebt } from "../../../lib/db/schema.ts";
import { owningAccount, requestedRow, visibleTo } from "./tenancy.ts";

const PAYMENT_DEBT_STATUSES = ["open", "paid", "uncollectible", "void"] as const;

/** numeric(14, 2): sent as a string or a number, stored and answered as a string. */
const amount = z
  .union([z.string(), z.number()])
  .transform((value) => String(value))
  .refine(
    (value) => /^\d{1,12}(\.\d{1,2})?$/.test(value) && Number(value) > 0,
    "must be a positive decimal with at most 2 decimal places",
  );

const createPaymentDebt = z.object({
  amount,
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/, "must be a 3-letter ISO 4217 code")
    .transform((code) => code.toUpperCase()),
  account: z.string().min(1).optional(),
});

const updatePaymentDebt = z.object({ status: z.enum(PAYMENT_DEBT_STATUSES) });

const listQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) });

/** Payment debts: rows of one account; an admin sees and creates them for any account. */
export function paymentDebtRoutes(): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();

  app.post(
    "/v3/payment-debts",
    handler(async (c) => {
      const input = createPaymentDebt.parse(await jsonBody(c));
      const owner = await owningAccount(c, input.account);
      const [row] = await c.var.database.db
        .insert(paymentDebt)
        .values({ ...input, account: owner })
        .returning();
      return ok(c, row, 201);
    }),
  );

  app.patch(
    "/v3/payment-debts/:id",
    handler(async (c) => {
      const input = updatePaymentDebt.parse(await jsonBody(c));
      const [row] = await c.var.database.db
        .update(paymentDebt)
        .set(input)
        .where(requestedRow(c, paymentDebt.id, paymentDebt.account))
        .returning();
      if (!row) throw notFound("payment debt");
      return ok(c, row);
    }),
  );

  app.delete(
    "/v3/payment-debts/:id",
    handler(async (c) => {
      const [row] = await c.var.database.db
        .delete(paymentDebt)
        .where(requestedRow(c, paymentDebt.id, paymentDebt.account))
        .returning({ id: paymentDebt.id });
      if (!row) throw notFound("payment debt");
      return ok(c, { id: row.id, deleted: true });
    }),
  );

  app.get(
    "/v3/payment-debts/:id",
    handler(async (c) => {
      const [row] = await c.var.database.db
        .select()
        .from(paymentDebt)
        .where(requestedRow(c, paymentDebt.id, paymentDebt.account));
      if (!row) throw notFound("payment debt");
      return c.json(row);
    }),
  );

  app.get(
    "/v3/payment-debts",
    handler(async (c) => {
      const { limit } = listQuery.parse(c.req.query());
      const data = await c.var.database.db
        .select()
        .from(paymentDebt)
        .where(visibleTo(c.var.principal, paymentDebt.account))
        .orderBy(desc(paymentDebt.createdAt), desc(paymentDebt.id))
        .limit(limit);
      return c.json({ data });
    }),
  );

  return app;
}
