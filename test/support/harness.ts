import type { Logger } from "../../lib/log/logger.ts";
import { PGlite } from "@electric-sql/pglite";
import { createApp } from "../../app/app.ts";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET, loadConfig } from "../../lib/config/env.ts";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { account } from "../../lib/db/schema.ts";
import { createHooklane, startLane } from "../../lib/create-hooklane.ts";
import { createVercelLane } from "../../lib/create-vercel-lane.ts";
import type { Hooklane } from "../../lib/hooklane.ts";
import type { SweepReport } from "../../lib/webhook/sweeper/webhook-sweeper.ts";
import type { Lane } from "../../lib/webhook/transport/postgres/postgres-lane.ts";
import { shiftLedgerTime } from "./ledger-time.ts";
import { consumeLane, startVercelQueueEmulator, type VercelQueueEmulator } from "./vercel-queue-emulator.ts";

export interface Harness {
  hooklane: Hooklane;
  lane: Lane | undefined;
  /** Starts the lane of a harness started with `lane: false` (what was published meanwhile waits for it). */
  startLane(): Promise<void>;
  /** Calls the API in-process with a token for `account` (admin when asked); `body` goes as JSON. */
  call(method: string, path: string, options?: CallOptions): Promise<HarnessAnswer>;
  /** The same call, answering with the Response itself (streams). */
  request(method: string, path: string, options?: CallOptions): Promise<Response>;
  /**
   * Creates account rows straight in the database, publishing nothing: an
   * account-scoped webhook needs its account to exist first.
   */
  accounts(...ids: string[]): Promise<void>;
  /** Waits for every publish the API started. */
  settled(): Promise<void>;
  /** The emulated Vercel Queue service, with the vercel driver. */
  queue: VercelQueueEmulator | undefined;
  /** Runs the transport's sweep once (vercel driver; the postgres lane needs none): route and deliver messages sent. */
  sweep(): Promise<{ routes: number; dispatches: number }>;
  /** Runs the vercel sweep once with a budget and a clock of the test's, and returns its whole report. */
  sweepReport(options?: { budgetMs?: number; clock?: () => number }): Promise<SweepReport>;
  /**
   * Moves time forward by `ms` for the queue service and the ledger alike
   * (vercel driver): the emulator's clock advances, and every time the
   * ledger keeps moves back by as much, so what falls due is due in both.
   */
  advance(ms: number): Promise<void>;
  close(): Promise<void>;
}

/** Who calls (a token for `account`, `sub` "tester" unless named, admin or support when asked) and what it sends. */
export interface CallOptions {
  body?: unknown;
  account?: string;
  admin?: boolean;
  support?: boolean;
  sub?: string;
  headers?: Record<string, string>;
}

/** An answer of the API: its JSON body parsed, and the bytes and headers as sent. */
export interface HarnessAnswer {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

/** How a suite gets its database: PGlite in memory, or a fresh PostgreSQL database. */
export type DatabaseFactory = () => Promise<{ database: Database; databaseUrl?: string; drop(): Promise<void> }>;

// Creating and migrating an embedded database takes seconds; clone a migrated one instead.
let template: Promise<File | Blob> | undefined;
async function migratedTemplate(): Promise<File | Blob> {
  template ??= (async () => {
    const pglite = await PGlite.create("memory://");
    const database = await openDatabase({ pglite });
    const dump = await pglite.dumpDataDir("none");
    await database.close();
    return dump;
  })();
  return template;
}

export const pgliteFactory: DatabaseFactory = async () => {
  const pglite = await PGlite.create({ loadDataDir: await migratedTemplate() });
  const database = await openDatabase({ pglite });
  return { database, drop: async () => {} };
};

/** A configuration for tests: loopback receivers allowed, compressed retries unless told otherwise. */
export function testConfig(env: Record<string, string> = {}, databaseUrl?: string) {
  return loadConfig({
    NODE_ENV: "test",
    WEBHOOK_ALLOWED_HOSTS: "127.0.0.1,localhost",
    WEBHOOK_RETRY_SCHEDULE: "100ms,100ms,100ms,100ms,100ms",
    WEBHOOK_TIMEOUT_MS: "2000",
    WEBHOOK_BREAKER_OPEN: "100ms,1s",
    // Suites burst hundreds of requests from one token; the rate limit's own tests turn it on.
    API_RATE_LIMIT: "false",
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...env,
  });
}

/** The API plus (unless `lane: false`) an in-process lane, on the factory's database. */
export type Driver = "postgres" | "vercel";

/** A `beforeAll` timeout for starting a harness: cloning the database and syncing the catalogue are slow on a busy machine. */
export const HARNESS_START_MS = 90_000;

export async function startHarness(
  factory: DatabaseFactory,
  options: {
    env?: Record<string, string>;
    lane?: boolean;
    driver?: Driver;
    outboxForwardGraceMs?: number;
    /** Where the product logs (default: as the configuration says). */
    logger?: Logger;
  } = {},
): Promise<Harness> {
  const { database, databaseUrl, drop } = await factory();
  const driver = options.driver ?? "postgres";
  const config = testConfig({ WEBHOOK_QUEUE_DRIVER: driver, ...options.env }, databaseUrl);
  const queue = driver === "vercel" ? startVercelQueueEmulator() : undefined;
  const hooklane = await createHooklane(config, {
    database,
    ...(queue ? { queue: queue.client } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.outboxForwardGraceMs === undefined ? {} : { outboxForwardGraceMs: options.outboxForwardGraceMs }),
  });
  const app = createApp(hooklane);
  const vercelLane = queue ? createVercelLane(hooklane, { now: () => queue.now() }) : undefined;
  let lane: Lane | undefined;
  const startTheLane = async () => {
    if (lane) throw new Error("the harness's lane is already running");
    if (vercelLane && queue) {
      // The platform's part: push each topic to its lane function, as their triggers in vercel.ts say.
      consumeLane(queue, vercelLane.handler, { env: options.env ?? {} });
      lane = { workerId: "vercel", stop: () => queue.close() };
    } else {
      lane = await startLane(hooklane);
    }
  };
  if (options.lane !== false) await startTheLane();
  const tokens = new Map<string, string>();
  const request: Harness["request"] = async (
    method,
    path,
    { body, account = "acc_test", admin = false, support = false, sub = "tester", headers = {} } = {},
  ) => {
    const key = `${sub}:${account}:${admin}:${support}`;
    if (!tokens.has(key)) tokens.set(key, await mintToken(DEVELOPMENT_JWT_SECRET, { sub, account, admin, support }));
    return app.request(path, {
      method,
      headers: { authorization: `Bearer ${tokens.get(key)}`, "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  };

  return {
    hooklane,
    get lane() {
      return lane;
    },
    startLane: startTheLane,
    request,
    async call(method, path, options) {
      const response = await request(method, path, options);
      const text = await response.text();
      const json = text !== "" && /json/.test(response.headers.get("content-type") ?? "");
      return { status: response.status, body: json ? JSON.parse(text) : undefined, text, headers: response.headers };
    },
    async accounts(...ids) {
      await database.db
        .insert(account)
        .values(ids.map((id) => ({ id, name: id })))
        .onConflictDoNothing();
    },
    settled: () => hooklane.publisher.settled(),
    queue,
    async sweep() {
      if (!vercelLane) return { routes: 0, dispatches: 0 };
      const { phases } = await vercelLane.sweep();
      return { routes: phases.outbox!.items, dispatches: phases.stranded!.items };
    },
    async sweepReport(run) {
      if (!vercelLane) throw new Error("sweepReport needs the vercel driver");
      return vercelLane.sweep(run);
    },
    async advance(ms) {
      if (!queue) throw new Error("advance needs the vercel driver");
      await shiftLedgerTime(database, ms);
      queue.advance(ms);
    },
    async close() {
      // Forwards the emulated service still holds would never settle otherwise.
      queue?.releaseHeld();
      await hooklane.publisher.settled();
      await lane?.stop();
      await queue?.close();
      await database.close();
      await hooklane.tracing?.shutdown();
      await drop();
    },
  };
}
