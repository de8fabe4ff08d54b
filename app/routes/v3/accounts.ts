import { eq } from "drizzle-orm";
import { z } from "zod";
import { afterCommit, ok, type ApiContext } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError, notFound } from "../../../lib/api/problem.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { account, type Account } from "../../../lib/db/schema.ts";
import { releaseAccountConsent } from "../../../lib/db/sql/endpoint-consent.ts";
import { changesSomething, idParams } from "./resource-fields.ts";

const ENDPOINT_CONSENT =
  "Whether its webhooks send nothing to a URL until the endpoint consents (answers the consent request, an `OPTIONS` with `WebHook-Request-Origin`): asked of every webhook created or given a new URL while it is on. Only an admin changes it; turned off, webhooks waiting for consent are sent to at once.";

const EXAMPLE = {
  id: "acc_4b1f9e2c7d8a4e6f9b0c1d2e3f4a5b6c",
  object: "account",
  name: "Acme",
  email: "ops@acme.example",
  endpointConsent: true,
  created: "2026-12-01T09:30:00.000Z",
} as const;

export const accountSchema = z
  .strictObject({
    id: z.string().describe("`acc_…`"),
    object: z.literal("account"),
    name: z.string().describe("The account's name."),
    email: z.string().nullable().describe("Where notices about its webhooks go."),
    endpointConsent: z.boolean().describe(ENDPOINT_CONSENT),
    created: timestamp,
  })
  .meta({ id: "Account", examples: [EXAMPLE] });

export function presentAccount(row: Account): z.output<typeof accountSchema> {
  return {
    id: row.id,
    object: "account",
    name: row.name,
    email: row.email,
    endpointConsent: row.endpointConsent,
    created: iso(row.createdAt),
  };
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
    endpointConsent: z
      .boolean()
      .optional()
      .describe(
        `${ENDPOINT_CONSENT} Unset: the deployment's default (\`WEBHOOK_ENDPOINT_CONSENT\`; on in production).`,
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
    endpointConsent: z.boolean().describe(`${ENDPOINT_CONSENT} Admins only.`),
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
      const endpointConsent = body.endpointConsent ?? c.get("hooklane").config.consent.newAccounts;
      const [row] = await c
        .get("database")
        .db.insert(account)
        .values({ ...body, endpointConsent })
        .onConflictDoNothing()
        .returning();
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
      description:
        "An account may update itself, an admin any; only an admin changes `endpointConsent`. Emits `account.updated`.",
      tag: "Accounts",
      params: accountParams,
      body: updateAccount,
      responses: {
        200: { description: "The updated account.", schema: accountSchema },
        403: { description: "`endpointConsent` is changed by admins only." },
      },
    },
    async (c, { params, body }) => {
      const principal = c.get("principal");
      if (body.endpointConsent !== undefined && !principal.admin) {
        throw new ApiError(403, "Forbidden", "Only an admin can change whether an account's endpoints must consent.");
      }
      const database = c.get("database");
      const [row] = await database.db
        .update(account)
        .set(body)
        .where(eq(account.id, visibleAccountId(c, params.id)))
        .returning();
      if (!row) throw notFound("account");
      if (body.endpointConsent === false) {
        // Its webhooks waiting for consent are sent to from now on.
        const released = await releaseAccountConsent(database, row.id);
        if (released > 0) afterCommit(c, () => c.get("hooklane").transport.sendDeliver([]));
      }
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
