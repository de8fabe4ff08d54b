import { and, eq, sql } from "drizzle-orm";
import { expect } from "vitest";
import { webhookDispatch } from "../../lib/db/schema.ts";
import { runRecoveryJobsTask } from "../../lib/webhook/sweeper/run-recovery-jobs.ts";
import {
  memoryReceiptStore,
  receive,
  type ReceiptStore,
  type SequenceGap,
  type WebhookEvent,
} from "../../lib/webhook/verify/webhook-verify.ts";
import { eventually } from "./eventually.ts";
import { startHarness, type DatabaseFactory, type Driver, type Harness } from "./harness.ts";
import { startReceiver, type ReceivedPost, type TestReceiver } from "./receiver.ts";

const ADMIN = { account: "acc_ops", admin: true };
const OWNER = { account: "acc_seq" };

/** A deterministic stream of numbers in [0, 1): the same run every time. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export interface SequenceSetup {
  harness: Harness;
  receiver: TestReceiver;
  webhookId: string;
  secret: string;
  /** What the subscriber does now: fail `failRate` of attempts with 503, or every one. */
  mode: { failRate: number };
  /** How each post was answered, by post. */
  answered: Map<ReceivedPost, number>;
  close(): Promise<void>;
}

/** A harness, a subscriber that fails as `mode` says, and one account webhook on `account.updated`. */
export async function setUpSequence(factory: DatabaseFactory, driver: Driver, seed = 7): Promise<SequenceSetup> {
  const random = seeded(seed);
  const mode = { failRate: 0 };
  const answered = new Map<ReceivedPost, number>();
  const receiver = await startReceiver((post) => {
    const status = random() < mode.failRate ? 503 : 200;
    answered.set(post, status);
    return { status };
  });
  const harness = await startHarness(factory, { driver });
  await harness.accounts(OWNER.account);
  const created = await harness.call("POST", "/v3/webhooks", {
    ...OWNER,
    body: { url: `${receiver.url}/seq`, events: ["account.updated"] },
  });
  expect(created.status, created.text).toBe(201);
  return {
    harness,
    receiver,
    webhookId: created.body.id,
    secret: created.body.secret,
    mode,
    answered,
    async close() {
      await harness.close();
      await receiver.close();
    },
  };
}

/** Publishes `count` `account.updated` events, `parallel` requests at a time. */
export async function publish(harness: Harness, count: number, parallel = 10): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        const i = next++;
        const answer = await harness.call("PATCH", `/v3/accounts/${OWNER.account}`, {
          ...ADMIN,
          body: { name: `Seq ${i}` },
        });
        expect(answer.status, answer.text).toBe(200);
      }
    }),
  );
  await harness.settled();
}

/** The webhook's dispatches by status, once none is open any more (bounded by `timeoutMs`). */
export async function settledDispatches(
  setup: SequenceSetup,
  done: (counts: Record<string, number>) => boolean,
  timeoutMs = 120_000,
): Promise<Record<string, number>> {
  const counts = async () => {
    const rows = await setup.harness.hooklane.database.db
      .select({ status: webhookDispatch.status, n: sql<number>`count(*)::integer` })
      .from(webhookDispatch)
      .where(eq(webhookDispatch.webhookId, setup.webhookId))
      .groupBy(webhookDispatch.status);
    return Object.fromEntries(rows.map((row) => [row.status, row.n]));
  };
  return eventually(counts, (now) => !now.pending && !now.error && done(now), { timeoutMs, everyMs: 100 });
}

/** Runs the sweeper's recovery task until it has nothing left to do (bounded). */
export async function runRecoveries(harness: Harness): Promise<void> {
  const context = { hooklane: harness.hooklane, workerId: "sequence-sweeper", now: () => new Date() };
  for (let step = 0; step < 100 && (await runRecoveryJobsTask.run(context)); step++);
}

export interface Receipts {
  /** Sequences taken as first receipts, in the order they were taken. */
  firsts: number[];
  duplicates: number;
  gaps: SequenceGap[];
  /** Every body posted, by event id. */
  bodies: Map<string, Set<string>>;
}

/**
 * The posts answered 200, through `receive()` in the order they arrived, as the subscriber would have taken them
 * (each verified at its arrival time), except those `dropped` says were lost on the subscriber's side.
 */
export async function receiveAll(
  setup: SequenceSetup,
  store: ReceiptStore = memoryReceiptStore(),
  dropped: (post: ReceivedPost, event: WebhookEvent) => boolean = () => false,
): Promise<Receipts> {
  const receipts: Receipts = { firsts: [], duplicates: 0, gaps: [], bodies: new Map() };
  for (const post of setup.receiver.posts) {
    const event = JSON.parse(post.body) as WebhookEvent;
    const bodies = receipts.bodies.get(event.id) ?? new Set();
    receipts.bodies.set(event.id, bodies.add(post.body));
    if (setup.answered.get(post) !== 200 || dropped(post, event)) continue;
    const got = await receive({
      payload: post.body,
      headers: post.headers as Record<string, string>,
      secret: setup.secret,
      store,
      stream: setup.webhookId,
      now: post.receivedAt,
    });
    if (!got.first) receipts.duplicates++;
    else receipts.firsts.push(got.event.sequence!);
    if (got.gap) receipts.gaps.push(got.gap);
  }
  return receipts;
}

/** The webhook's stream from `GET /v3/events` after `after`, page by page (bounded), up to `until` when given. */
export async function readStream(setup: SequenceSetup, after = 0, until = Infinity): Promise<WebhookEvent[]> {
  const events: WebhookEvent[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 1_000; page++) {
    const position: string = cursor ? `cursor=${cursor}` : `after=${after}`;
    const limit = Math.min(100, until - after - events.length);
    const path = `/v3/events?webhook=${setup.webhookId}&limit=${limit}&${position}`;
    const answer = await setup.harness.call("GET", path, OWNER);
    expect(answer.status, answer.text).toBe(200);
    events.push(...(answer.body.data as WebhookEvent[]));
    cursor = answer.body.nextCursor;
    if (!cursor || events.length >= until - after) break;
  }
  return events;
}

/** The sequences of `numbers` missing from 1..`count`, and any taken twice. */
export function coverage(numbers: readonly number[], count: number): { missing: number[]; twice: number[] } {
  const seen = new Map<number, number>();
  for (const n of numbers) seen.set(n, (seen.get(n) ?? 0) + 1);
  const missing = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !seen.has(n));
  const twice = [...seen].filter(([, times]) => times > 1).map(([n]) => n);
  return { missing, twice };
}

/**
 * Sequence drill: `count` events to a subscriber failing 30 % of attempts, a pause in the middle, an outage that
 * exhausts some, their recovery, then a resend of everything. The subscriber, through `receive()`, takes every
 * sequence from 1 to `count` exactly once as a first receipt; every attempt of an event carries the same body.
 */
export async function sequenceDrill(setup: SequenceSetup, count: number): Promise<Record<string, number>> {
  const { harness, webhookId } = setup;
  const since = new Date(Date.now() - 60_000).toISOString();
  const flaky = Math.round(count * 0.6);
  const paused = Math.round(count * 0.2);
  const outage = count - flaky - paused;

  setup.mode.failRate = 0.3;
  await publish(harness, flaky);
  let answer = await harness.call("PATCH", `/v3/webhooks/${webhookId}`, { ...OWNER, body: { status: "paused" } });
  expect(answer.status, answer.text).toBe(200);
  await publish(harness, paused);
  answer = await harness.call("PATCH", `/v3/webhooks/${webhookId}`, { ...OWNER, body: { status: "active" } });
  expect(answer.status, answer.text).toBe(200);
  setup.mode.failRate = 1;
  await publish(harness, outage);
  const afterOutage = await settledDispatches(setup, (n) => (n.success ?? 0) + (n.exhausted ?? 0) === count);

  setup.mode.failRate = 0;
  answer = await harness.call("POST", `/v3/webhooks/${webhookId}/recover`, { ...OWNER, body: { since } });
  expect(answer.status, answer.text).toBe(202);
  await runRecoveries(harness);
  await settledDispatches(setup, (n) => n.success === count);
  const delivered = setup.receiver.posts.length;
  answer = await harness.call("POST", "/v3/webhook-resends", {
    ...OWNER,
    body: { eventType: "account.updated", since },
  });
  expect(answer.status, answer.text).toBe(202);
  await runRecoveries(harness);
  await eventually(
    async () => setup.receiver.posts.length,
    (posts) => posts >= delivered + count,
    { timeoutMs: 120_000, everyMs: 100 },
  );
  await settledDispatches(setup, (n) => n.success === count);

  const stored = await harness.hooklane.database.db
    .select({ sequence: webhookDispatch.sequence })
    .from(webhookDispatch)
    .where(and(eq(webhookDispatch.webhookId, webhookId)));
  expect(
    coverage(
      stored.map((row) => row.sequence!),
      count,
    ),
  ).toEqual({ missing: [], twice: [] });

  const receipts = await receiveAll(setup);
  expect(coverage(receipts.firsts, count)).toEqual({ missing: [], twice: [] });
  expect(receipts.firsts).toHaveLength(count);
  expect([...receipts.bodies.values()].filter((bodies) => bodies.size !== 1)).toEqual([]);
  return {
    events: count,
    posts: setup.receiver.posts.length,
    failedPosts: [...setup.answered.values()].filter((status) => status !== 200).length,
    exhaustedBeforeRecovery: afterOutage.exhausted ?? 0,
    duplicatesDropped: receipts.duplicates,
    firstReceipts: receipts.firsts.length,
  };
}
