import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { startApi, startWorker, type ProductProcess, type ProductSettings } from "../bench/product-processes.ts";
import { forkRpc, type RpcChild } from "../bench/rpc.ts";
import type { SubscriberReady } from "../bench/subscriber.ts";
import { mintToken } from "../lib/auth/jwt.ts";
import { openDatabase } from "../lib/db/client.ts";
import { autoSyncCatalogue } from "../lib/webhook/catalogue/catalogue-auto-sync.ts";
import { createPostgresCluster, type PostgresCluster } from "./postgres-cluster.ts";

export const DRILL_ACCOUNT = "acc_drill";
/** The event the load creates. */
export const DRILL_EVENT = "payment-debt.created";

/** A webhook the drill registered, and whether the load's events are for it. */
export interface DrillWebhook {
  id: string;
  /** Its path on the receiver: tells its POSTs apart from the others'. */
  path: string;
  matching: boolean;
}

export interface DrillStack {
  readonly cluster: PostgresCluster;
  readonly receiver: RpcChild<SubscriberReady>;
  /** The API now running (a new process after every restart, on the same port). */
  readonly api: ProductProcess & { url: string };
  /** The lane workers now running, by slot. */
  readonly workers: readonly ProductProcess[];
  /** Every product process started so far, dead or alive: whose logs are judged. */
  readonly processes: readonly ProductProcess[];
  readonly token: string;
  readonly webhooks: readonly DrillWebhook[];
  /** Strings no log may contain: secrets in every form, the token. */
  readonly secrets: ReadonlyArray<{ label: string; value: string }>;
  /** SIGKILL the API and start a new one on the same port; resolves when it listens again. */
  killApi(): Promise<void>;
  /** SIGKILL the worker in `slot` (it is not restarted). */
  killWorker(slot: number): Promise<void>;
  /** SIGTERM the worker in `slot`; resolves with how long it took to exit, in ms, and its exit code. */
  terminateWorker(slot: number): Promise<{ ms: number; code: number | null }>;
  /** Starts a new worker in `slot`. */
  startWorker(slot: number): Promise<void>;
  /** The lane worker id a worker process announced when it started. */
  workerIdOf(process: ProductProcess): string | undefined;
  /** Stops everything (SIGTERM) and removes the cluster. */
  close(): Promise<void>;
}

/**
 * One drill's world, as a self-hosted deployment runs it: a throwaway
 * PostgreSQL cluster (migrated, catalogue synced), the API (`npm run api`)
 * and `workers` lane workers (`npm run worker`) in production mode with a
 * compressed retry schedule, and a recording receiver. Through the API, as a
 * customer would: an account, a webhook of that account and a global one
 * that hear the load's event, and one that hears another event only.
 */
export async function startDrillStack(options: {
  workers: number;
  logDir: string;
  retrySchedule: string;
}): Promise<DrillStack> {
  mkdirSync(options.logDir, { recursive: true });
  const cluster = await createPostgresCluster();
  const processes: ProductProcess[] = [];
  let receiver: RpcChild<SubscriberReady> | undefined;
  try {
    const database = await openDatabase({ databaseUrl: cluster.url, applicationName: "hooklane-drill" });
    await autoSyncCatalogue(database);
    await database.close();

    const settings: ProductSettings = {
      databaseUrl: cluster.url,
      secretKey: randomBytes(32).toString("base64url"),
      jwtSecret: randomBytes(32).toString("base64url"),
      concurrency: 200,
      connections: 16,
      logDir: options.logDir,
      cpuProfile: false,
      env: { WEBHOOK_RETRY_SCHEDULE: options.retrySchedule },
      // A process restarted mid-drill shares the machine with everything the drill runs.
      startTimeoutMs: 120_000,
    };
    const counters = { api: 0, worker: new Map<number, number>() };
    const nextWorkerName = (slot: number) => {
      const n = (counters.worker.get(slot) ?? 0) + 1;
      counters.worker.set(slot, n);
      return `worker-${String.fromCharCode(97 + slot)}-${n}`;
    };
    const launchApi = async (port?: number) => {
      const started = await startApi(settings, {
        publish: true,
        name: `api-${++counters.api}`,
        ...(port ? { port } : {}),
      });
      processes.push(started);
      return started;
    };
    const launchWorker = async (slot: number) => {
      const started = await startWorker(settings, { name: nextWorkerName(slot) });
      processes.push(started);
      return started;
    };

    receiver = await forkRpc<SubscriberReady>("./subscriber.ts");
    let api = await launchApi();
    const workers = await Promise.all(Array.from({ length: options.workers }, (_, slot) => launchWorker(slot)));

    const admin = await mintToken(settings.jwtSecret, { sub: "drill", account: DRILL_ACCOUNT, admin: true });
    const token = await mintToken(settings.jwtSecret, { sub: "drill", account: DRILL_ACCOUNT });
    await call(api.url, admin, "/v3/accounts", { id: DRILL_ACCOUNT, name: "Drill" });
    const hook = async (path: string, events: string[], bearer: string, scope: "account" | "global") => {
      const url = `${receiver!.ready.url}${path}`;
      const created = await call(api.url, bearer, "/v3/webhooks", { url, events, scope });
      return { id: String(created.id), secret: String(created.secret), path };
    };
    const hooks = [
      { ...(await hook("/hooks/account", [DRILL_EVENT], token, "account")), matching: true },
      { ...(await hook("/hooks/global", ["*"], admin, "global")), matching: true },
      { ...(await hook("/hooks/other", ["subscription.created"], token, "account")), matching: false },
    ];
    const sealed = await cluster.query<{ id: string; secret_sealed: string }>("select id, secret_sealed from webhook");
    const secrets = [
      { label: "AUTH_JWT_SECRET", value: settings.jwtSecret },
      { label: "WEBHOOK_SECRET_KEY", value: settings.secretKey },
      { label: "a bearer token", value: token },
      { label: "an admin token", value: admin },
      ...hooks.map((h) => ({ label: `the secret of ${h.id}`, value: h.secret })),
      ...sealed.map((row) => ({ label: `the sealed secret of ${row.id}`, value: row.secret_sealed })),
    ];

    const stack: DrillStack = {
      cluster,
      receiver,
      get api() {
        return api;
      },
      workers,
      processes,
      token,
      webhooks: hooks.map(({ id, path, matching }) => ({ id, path, matching })),
      secrets,
      async killApi() {
        const port = Number(new URL(api.url).port);
        await api.kill();
        api = await launchApi(port);
      },
      async killWorker(slot) {
        await workers[slot]!.kill();
      },
      async terminateWorker(slot) {
        const started = performance.now();
        await workers[slot]!.stop();
        return { ms: performance.now() - started, code: await workers[slot]!.exited };
      },
      async startWorker(slot) {
        workers[slot] = await launchWorker(slot);
      },
      workerIdOf(process) {
        return /lane worker (\S+) started/.exec(readFileSync(process.logFile, "utf8"))?.[1];
      },
      async close() {
        await Promise.all(processes.map((p) => p.stop()));
        await receiver!.stop();
        await cluster.destroy();
      },
    };
    return stack;
  } catch (error) {
    await Promise.all(processes.map((p) => p.stop()));
    await receiver?.stop();
    await cluster.destroy();
    throw error;
  }
}

async function call(apiUrl: string, token: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${apiUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`POST ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}
