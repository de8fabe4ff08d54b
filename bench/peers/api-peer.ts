// The API peer: `POST /v3/payment-debts` written by hand on Hono + jose + zod
// + pg, the way a team would write that one endpoint without hooklane. Same
// table, same two statements (the owning account exists, then the insert),
// the same bearer token verified on every request (HS256, `exp` required, the
// same claims), the same validation of the body and the same answer. It runs
// as `node bench/peers/api-peer.ts` with PORT, DATABASE_URL and AUTH_JWT_SECRET.
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { errors, jwtVerify } from "jose";
import pg from "pg";
import { z } from "zod";

const { PORT, DATABASE_URL, AUTH_JWT_SECRET } = process.env;
if (!PORT || !DATABASE_URL || !AUTH_JWT_SECRET) throw new Error("PORT, DATABASE_URL and AUTH_JWT_SECRET are required");

// pg's default pool size, as hooklane's.
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 10, application_name: "api-peer" });
pool.on("error", (error) => console.error(`idle client failed: ${error.message}`));

const secret = new TextEncoder().encode(AUTH_JWT_SECRET);
const claims = z.object({
  sub: z.string().min(1),
  account: z.string().min(1),
  role: z.string().optional(),
  exp: z.number(),
});
type Principal = { sub: string; account: string; admin: boolean };

const createPaymentDebt = z.strictObject({
  amount: z
    .union([z.string().max(40), z.number()])
    .transform((value) => String(value))
    .refine((value) => /^\d{1,12}(\.\d{1,2})?$/.test(value) && Number(value) > 0, "must be a positive decimal"),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/, "must be a 3-letter ISO 4217 code")
    .transform((code) => code.toUpperCase()),
  account: z.string().min(1).max(100).optional(),
});

const problem = (status: 400 | 401 | 422 | 500, title: string, detail: string) =>
  new HTTPException(status, {
    res: new Response(JSON.stringify({ status, title, detail }), {
      status,
      headers: { "content-type": "application/problem+json" },
    }),
  });

const app = new Hono<{ Variables: { principal: Principal } }>();

app.use("/v3/*", async (c, next) => {
  const token = /^Bearer\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  if (!token) throw problem(401, "Unauthorized", "A bearer token is required.");
  let payload: unknown;
  try {
    ({ payload } = await jwtVerify(token, secret, { algorithms: ["HS256"], requiredClaims: ["exp"] }));
  } catch (error) {
    if (error instanceof errors.JOSEError) throw problem(401, "Unauthorized", "The token is not valid.");
    throw error;
  }
  const parsed = claims.safeParse(payload);
  if (!parsed.success) throw problem(401, "Unauthorized", "The token lacks the sub or account claim.");
  c.set("principal", { sub: parsed.data.sub, account: parsed.data.account, admin: parsed.data.role === "admin" });
  await next();
});

app.post("/v3/payment-debts", async (c) => {
  let input: unknown;
  try {
    input = await c.req.json();
  } catch {
    throw problem(400, "Bad Request", "The body must be a JSON document.");
  }
  const parsed = createPaymentDebt.safeParse(input);
  if (!parsed.success) {
    throw problem(422, "Unprocessable Content", parsed.error.issues.map((i) => i.message).join("; "));
  }
  const body = parsed.data;
  const principal = c.get("principal");
  const owner = principal.admin && body.account ? body.account : principal.account;
  const found = await pool.query("select id from account where id = $1", [owner]);
  if (found.rowCount === 0) throw problem(422, "Unprocessable Content", "account: no such account");
  const { rows } = await pool.query<{
    id: string;
    account: string;
    amount: string;
    currency: string;
    status: string;
    created_at: Date;
  }>(
    "insert into payment_debt (account, amount, currency) values ($1, $2, $3) " +
      "returning id, account, amount, currency, status, created_at",
    [owner, body.amount, body.currency],
  );
  const row = rows[0]!;
  return c.json(
    {
      id: row.id,
      object: "payment-debt",
      account: row.account,
      amount: row.amount,
      currency: row.currency,
      status: row.status,
      created: row.created_at.toISOString(),
    },
    201,
  );
});

app.onError((error, c) => {
  if (error instanceof HTTPException) return error.getResponse();
  console.error(`request failed: ${(error as Error).message}`);
  return c.json({ status: 500, title: "Internal Server Error" }, 500);
});

const server = serve({ fetch: app.fetch, port: Number(PORT), hostname: "127.0.0.1" }, (info) => {
  console.log(`api peer on http://127.0.0.1:${info.port}`);
});
process.on("SIGTERM", () => {
  server.close();
  void pool.end().finally(() => process.exit(0));
});
