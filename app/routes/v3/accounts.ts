import { eq } from "drizzle-orm";
import { z } from "zod";
import { ok, type ApiContext } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError, notFound } from "../../../lib/api/problem.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { account, type Account } from "../../../lib/db/schema.ts";
import { changesSomething, idParams } from "./resource-fields.ts";

const EXAMPLE = {
  id: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
  object: "account",
  name: "Acme",
  email: "ops@acme.example",
  created: "2026-12-01T09:30:00.000Z",
} as const;

export const accountSchema = z
  .strictObject({
    id: z.string().describe("`acc_…`"),
    object: z.literal("account"),
    name: z.string().describe("The account's name."),
    email: z.string().nullable().describe("Where notices about its webhooks go."),
    created: timestamp,
  })
  .meta({ id: "Account", examples: [EXAMPLE] });

export function presentAccount(row: Account): z.output<typeof accountSchema> {
  return { id: row.id, object: "account", name: row.name, email: row.email, created: iso(row.createdAt) };
}

const name = z.string().trim().min(1).max(200).describe("The account's name; surrounding spaces are trimmed.");
const email = z.email().max(254);

const createAccount = z
  .strictObject({
    name,
    email: email
      .optional()
      .describe(
        "Where notices about its webhooks go (exhausted deliveries, disabled webhooks); without it none are mailed.",
      ),
    id: z
      .string()
      .regex(/^acc_[A-Za-z0-9_-]{1,60}$/, "must be `acc_` and 1-60 letters, digits, '_' or '-'")
      .optional()
      .describe("An admin may choose the id, e.g. to mirror the account of another system."),
  })
  .meta({ examples: [{ name: "Acme", email: "ops@acme.example" }] });

const updateAccount = z
  .strictObject({
    name,
    email: email.nullable().describe("Where notices about its webhooks go; null: none are mailed."),
  })
  .partial()
  .refine(...changesSomething)
  .meta({ examples: [{ email: "billing@acme.example" }] });

const accountParams = idParams("The account's id (`acc_…`).");

/** Accounts: only admins create them; an account may read and update itself, an admin any. */
export function addAccountRoutes(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/accounts",
      operationId: "createAccount",
      summary: "Create an account",
      description: "Admins only. Emits `account.created`.",
      tag: "Accounts",
      body: createAccount,
      responses: {
        201: { description: "The new account.", schema: accountSchema },
        403: { description: "Only admins create accounts." },
        409: { description: "The chosen id is taken." },
      },
    },
    async (c, { body }) => {
      if (!c.get("principal").admin) throw new ApiError(403, "Forbidden", "Only an admin can create accounts.");
      const [row] = await c.get("database").db.insert(account).values(body).onConflictDoNothing().returning();
      if (!row) throw new ApiError(409, "Conflict", `An account with id ${body.id} already exists.`);
      return ok(c, presentAccount(row), 201);
    },
  );

  router.add(
    {
      method: "patch",
      path: "/v3/accounts/:id",
      operationId: "updateAccount",
      summary: "Update an account",
      description: "An account may update itself, an admin any. Emits `account.updated`.",
      tag: "Accounts",
      params: accountParams,
      body: updateAccount,
      responses: { 200: { description: "The updated account.", schema: accountSchema } },
    },
    async (c, { params, body }) => {
      const [row] = await c
        .get("database")
        .db.update(account)
        .set(body)
        .where(eq(account.id, visibleAccountId(c, params.id)))
        .returning();
      if (!row) throw notFound("account");
      return ok(c, presentAccount(row));
    },
  );

  router.add(
    {
      method: "get",
      path: "/v3/accounts/:id",
      operationId: "getAccount",
      summary: "Get an account",
      tag: "Accounts",
      params: accountParams,
      responses: { 200: { description: "The account.", schema: accountSchema } },
    },
    async (c, { params }) => {
      const [row] = await c
        .get("database")
        .db.select()
        .from(account)
        .where(eq(account.id, visibleAccountId(c, params.id)));
      if (!row) throw notFound("account");
      return c.json(presentAccount(row));
    },
  );
}

/** `id` if the caller may touch it: any for an admin, only its own otherwise (404, not 403). */
function visibleAccountId(c: ApiContext, id: string): string {
  const principal = c.get("principal");
  if (!principal.admin && id !== principal.account) throw notFound("account");
  return id;
}
