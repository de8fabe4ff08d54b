import { sql } from "drizzle-orm";
import { z } from "zod";
import { ok } from "../../../lib/api/handler.ts";
import { listOf, listPage, pageQuery, readNewestFirst } from "../../../lib/api/list-page.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { preparedPerDatabase } from "../../../lib/db/prepared.ts";
import { paymentDebt, type PaymentDebt } from "../../../lib/db/schema.ts";
import { deleted, deletedSchema, idParams } from "./resource-fields.ts";
import { insertForOwner, requestedRow, visibleTo } from "./tenancy.ts";

const PAYMENT_DEBT_STATUSES = ["open", "paid", "uncollectible", "void"] as const;

const EXAMPLE = {
  id: "pd_2f97c4e1a8b34d6e9f0a1b2c3d4e5f6a",
  object: "payment-debt",
  account: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
  amount: "42.00",
  currency: "EUR",
  status: "open",
  created: "2026-12-01T09:30:00.000Z",
} as const;

export const paymentDebtSchema = z
  .strictObject({
    id: z.string().describe("`pd_…`"),
    object: z.literal("payment-debt"),
    account: z.string().describe("The owning account (`acc_…`)."),
    amount: z.string().describe("A decimal with 2 places, as a string so no precision is lost."),
    currency: z.string().describe("ISO 4217, upper case."),
    status: z.enum(PAYMENT_DEBT_STATUSES).describe("`open` when created; after that, whatever a PATCH last set."),
    created: timestamp,
  })
  .meta({ id: "PaymentDebt", examples: [EXAMPLE] });

export function presentPaymentDebt(row: PaymentDebt): z.output<typeof paymentDebtSchema> {
  return {
    id: row.id,
    object: "payment-debt",
    account: row.account,
    amount: row.amount,
    currency: row.currency,
    status: row.status as (typeof PAYMENT_DEBT_STATUSES)[number],
    created: iso(row.createdAt),
  };
}

/** numeric(14, 2): sent as a string or a number, stored and answered as a string. */
const amount = z
  .union([z.string().max(40), z.number()])
  .transform((value) => String(value))
  .refine(
    (value) => /^\d{1,12}(\.\d{1,2})?$/.test(value) && Number(value) > 0,
    "must be a positive decimal with at most 12 digits before the point and 2 after",
  )
  .describe(
    'The amount owed: a positive decimal, at most 12 digits before the point and 2 after, as a string (`"42.00"`) or a number.',
  );

const createPaymentDebt = z
  .strictObject({
    amount,
    currency: z
      .string()
      .regex(/^[A-Za-z]{3}$/, "must be a 3-letter ISO 4217 code")
      .transform((code) => code.toUpperCase())
      .describe("ISO 4217 code, in any case; stored upper case."),
    account: z.string().min(1).max(100).optional().describe("Admins only: the owning account; others get their own."),
  })
  .meta({ examples: [{ amount: "42.00", currency: "EUR" }] });

const insertPaymentDebt = preparedPerDatabase((db) =>
  db
    .insert(paymentDebt)
    .values({
      id: sql.placeholder("id"),
      account: sql.placeholder("account"),
      amount: sql.placeholder("amount"),
      currency: sql.placeholder("currency"),
    })
    .returning()
    .prepare("payment_debt_insert"),
);

const updatePaymentDebt = z
  .strictObject({ status: z.enum(PAYMENT_DEBT_STATUSES).describe("The debt's new status.") })
  .meta({ examples: [{ status: "paid" }] });

const debtParams = idParams("The payment debt's id (`pd_…`).");

/** Payment debts: rows of one account; an admin sees and creates them for any account. */
export function addPaymentDebtRoutes(router: OperationRouter): void {
  const tag = "Payment debts";

  router.add(
    {
      method: "post",
      path: "/v3/payment-debts",
      operationId: "createPaymentDebt",
      summary: "Create a payment debt",
      description: "Emits `payment-debt.created`.",
      tag,
      body: createPaymentDebt,
      responses: { 201: { description: "The new payment debt.", schema: paymentDebtSchema } },
    },
    async (c, { body }) => {
      const [row] = await insertForOwner(c, body.account, "pd", (db, owner, id) =>
        insertPaymentDebt(db).execute({
          id,
          account: owner,
          amount: body.amount,
          currency: body.currency,
        }),
      );
      return ok(c, presentPaymentDebt(row!), 201);
    },
  );

  router.add(
    {
      method: "patch",
      path: "/v3/payment-debts/:id",
      operationId: "updatePaymentDebt",
      summary: "Change a payment debt's status",
      description: "Emits `payment-debt.updated`.",
      tag,
      params: debtParams,
      body: updatePaymentDebt,
      responses: { 200: { description: "The updated payment debt.", schema: paymentDebtSchema } },
    },
    async (c, { body }) => {
      const [row] = await c
        .get("database")
        .db.update(paymentDebt)
        .set(body)
        .where(requestedRow(c, paymentDebt.id, paymentDebt.account))
        .returning();
      if (!row) throw notFound("payment debt");
      return ok(c, presentPaymentDebt(row));
    },
  );

  router.add(
    {
      method: "delete",
      path: "/v3/payment-debts/:id",
      operationId: "deletePaymentDebt",
      summary: "Delete a payment debt",
      description: "Emits `payment-debt.purged`.",
      tag,
      params: debtParams,
      responses: {
        200: {
          description: "Deleted.",
          schema: deletedSchema("payment-debt", "DeletedPaymentDebt", EXAMPLE.id),
        },
      },
    },
    async (c) => {
      const [row] = await c
        .get("database")
        .db.delete(paymentDebt)
        .where(requestedRow(c, paymentDebt.id, paymentDebt.account))
        .returning({ id: paymentDebt.id });
      if (!row) throw notFound("payment debt");
      return ok(c, deleted("payment-debt", row.id));
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/payment-debts/:id",
      operationId: "getPaymentDebt",
      summary: "Get a payment debt",
      tag,
      params: debtParams,
      responses: { 200: { description: "The payment debt.", schema: paymentDebtSchema } },
    },
    async (c) => {
      const [row] = await c
        .get("database")
        .db.select()
        .from(paymentDebt)
        .where(requestedRow(c, paymentDebt.id, paymentDebt.account));
      if (!row) throw notFound("payment debt");
      return c.json(presentPaymentDebt(row));
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/payment-debts",
      operationId: "listPaymentDebts",
      summary: "List payment debts",
      description: "The caller's account's debts (every account's for an admin), newest first.",
      tag,
      query: z.strictObject(pageQuery),
      responses: { 200: { description: "A page of payment debts.", schema: listOf(paymentDebtSchema) } },
    },
    async (c, { query }) => {
      const rows = await readNewestFirst(c.get("database").db, paymentDebt, {
        scope: visibleTo(c.get("principal"), paymentDebt.account),
        ...query,
      });
      return c.json(listPage(rows, query.limit, presentPaymentDebt));
    },
  );
}
