import type pg from "pg";
import type { Logger } from "../log/logger.ts";
import { backoffMs, type Backoff } from "../backoff.ts";
import type { OutageTracker } from "./database-outage.ts";

/** Reconnecting a lost LISTEN session: 100 ms, doubling to 5 s. */
const LISTENER_BACKOFF: Backoff = { baseMs: 100, maxMs: 5_000, jitter: 0.2 };

export interface ListenerHealth {
  /** True while the LISTEN session is connected and listening to every channel. */
  up: boolean;
  channels: string[];
  /** When the session was last lost, if it is down. */
  downSince: Date | undefined;
  /** How many times the session was re-established since start. */
  reconnects: number;
}

export interface SharedListener {
  /** Adds a channel; `onNotify` is also called with "" after every reconnection, to catch up. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  readonly health: ListenerHealth;
  close(): Promise<void>;
}

/**
 * One LISTEN session per process, shared by every channel, that heals
 * itself: when the connection errors or ends (a database restart, a network
 * blip) it reconnects with backoff, issues LISTEN again for every channel,
 * and then wakes every subscriber once so nothing NOTIFY'd meanwhile is
 * waited on until the next poll. Loss and recovery are one log line each.
 * While the database is known to be down, the next try comes as soon as it
 * answers again rather than at the end of the backoff.
 */
export function createSharedListener(options: {
  connect: () => pg.Client;
  logger: Logger;
  /** The pool's outage tracker: while it knows of an outage, a reconnection is tried as soon as it ends. */
  outage?: OutageTracker;
}): SharedListener {
  const { logger } = options;
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let client: pg.Client | undefined;
  let connecting: Promise<void> | undefined;
  let downSince: Date | undefined;
  let reconnects = 0;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;

  const quote = (channel: string) => `"${channel.replaceAll('"', '""')}"`;

  async function open(): Promise<void> {
    const next = options.connect();
    next.on("notification", (message) => {
      for (const handler of handlers.get(message.channel) ?? []) handler(message.payload ?? "");
    });
    next.on("error", (error) => lost(next, error));
    next.on("end", () => lost(next, new Error("connection ended")));
    try {
      await next.connect();
      for (const channel of handlers.keys()) await next.query(`listen ${quote(channel)}`);
    } catch (error) {
      await next.end().catch(() => {});
      throw error;
    }
    client = next;
  }

  function lost(which: pg.Client, error: unknown): void {
    if (closed || which !== client) return;
    client = undefined;
    which.end().catch(() => {});
    downSince = new Date();
    logger.warn({ err: error, channels: [...handlers.keys()] }, "LISTEN session lost; reconnecting");
    schedule();
  }

  function schedule(): void {
    if (closed || retry) return;
    const timer = setTimeout(reconnect, backoffMs(LISTENER_BACKOFF, failures++));
    timer.unref();
    retry = timer;
    if (options.outage?.down) {
      void options.outage.recovered().then(() => {
        if (retry !== timer) return;
        clearTimeout(timer);
        void reconnect();
      });
    }
  }

  async function reconnect(): Promise<void> {
    retry = undefined;
    if (closed || client) return;
    try {
      await (connecting ??= open().finally(() => (connecting = undefined)));
    } catch {
      schedule();
      return;
    }
    reconnects++;
    failures = 0;
    const downForMs = downSince ? Date.now() - downSince.getTime() : 0;
    downSince = undefined;
    logger.info({ downForMs, channels: [...handlers.keys()] }, "LISTEN session back");
    // Whatever was notified while we were away: look now rather than at the next poll.
    for (const set of handlers.values()) for (const handler of set) handler("");
  }

  return {
    async listen(channel, onNotify) {
      const first = !handlers.has(channel);
      if (first) handlers.set(channel, new Set());
      handlers.get(channel)!.add(onNotify);
      if (!client && !downSince) await (connecting ??= open().finally(() => (connecting = undefined)));
      // LISTEN is idempotent; this covers a channel added while the session was being opened.
      if (client && first) await client.query(`listen ${quote(channel)}`);
      return async () => {
        handlers.get(channel)?.delete(onNotify);
      };
    },
    get health() {
      return { up: client !== undefined, channels: [...handlers.keys()], downSince, reconnects };
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      await connecting?.catch(() => {});
      const last = client;
      client = undefined;
      await last?.end().catch(() => {});
    },
  };
}
