import { loadavg } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { now } from "../bench/bench-context.ts";
import { distribution, type Distribution } from "../bench/stats.ts";
import type { Arrivals } from "../bench/subscriber.ts";
import type { DrillName, DrillOptions } from "./drill-options.ts";
import { startDrillStack, type DrillStack } from "./drill-stack.ts";
import {
  checkLedger,
  committedResources,
  latencyBetween,
  latencySamples,
  missingDeliveries,
  type LatencySample,
  type LedgerFigures,
} from "./ledger-check.ts";
import { startLoad, type LoadRecord } from "./load-driver.ts";
import { scanLogs, type LogFigures } from "./log-scan.ts";

/** A fault as it happened, in seconds from the start of the load. */
export interface FaultWindow {
  what: string;
  from: number;
  to: number;
}

/** One pass/fail judgement of a drill. Timing checks are reported but do not fail a `--quick` run. */
export interface Check {
  name: string;
  value: string;
  ok: boolean;
  timing?: boolean;
}

export interface FaultContext {
  stack: DrillStack;
  /** Resolves `seconds` after the load started. */
  at(seconds: number): Promise<void>;
  /** Runs one fault and records when it started and ended. */
  fault(what: string, run: () => Promise<void>): Promise<void>;
  /** Figures the drill reports besides the common ones. */
  figures: Record<string, string>;
  checks: Check[];
}

export interface JudgeContext {
  stack: DrillStack;
  ledger: LedgerFigures;
  samples: readonly LatencySample[];
  /** In `now()`'s clock. */
  loadStartedAt: number;
  faults: readonly FaultWindow[];
  logs: LogFigures;
  figures: Record<string, string>;
  checks: Check[];
}

/** One drill: how many workers, how long the load runs, the faults, and its own checks. */
export interface DrillPlan {
  name: DrillName;
  title: string;
  /** The load runs this long at least, and `tail` seconds past the end of the last fault. */
  seconds: number;
  tail: number;
  /** Latency "after" covers events acknowledged this long after the last fault ended. */
  afterWindow?: number;
  inject(context: FaultContext): Promise<void>;
  judge?(context: JudgeContext): Promise<void>;
}

export interface DrillResult {
  name: DrillName;
  /** The name, and the run's number for drills run several times. */
  label: string;
  title: string;
  /** 1-based, for drills run several times. */
  run: number;
  /** The machine's 1-minute load average when the drill started: on a shared machine, the noise in its figures. */
  loadAverage: number;
  ok: boolean;
  load: Omit<LoadRecord, "acknowledged"> & { rate: number; concurrency: number; answer: Distribution };
  ledger: LedgerFigures;
  /** From the end of the load and of the last fault to the last owed delivery; NaN when it never came. */
  drainMs: number;
  latency: { before: Distribution; during: Distribution; after: Distribution; all: Distribution };
  logs: Omit<LogFigures, "byProcess"> & { byProcess: LogFigures["byProcess"] };
  faults: FaultWindow[];
  figures: Record<string, string>;
  checks: Check[];
  error?: string;
}

/**
 * Runs one drill: its own cluster and processes (drill-stack.ts), the load
 * for `plan.seconds` while `plan.inject` breaks things, then waits for every
 * delivery owed, reads the ledger and the logs, and judges.
 */
export async function runDrill(
  plan: DrillPlan,
  options: DrillOptions,
  context: { run: number; runs: number; logDir: string; progress(message: string): void },
): Promise<DrillResult> {
  const { sizes } = options;
  const label = context.runs > 1 ? `${plan.name} #${context.run}` : plan.name;
  const [loadAverage] = loadavg();
  const stack = await startDrillStack({
    workers: options.workers,
    logDir: join(context.logDir, `${plan.name}-${context.run}`),
    retrySchedule: options.retrySchedule,
  });
  try {
    const figures: Record<string, string> = {};
    const checks: Check[] = [];
    const faults: FaultWindow[] = [];
    const load = startLoad({
      url: stack.api.url,
      token: stack.token,
      rate: sizes.rate,
      concurrency: sizes.concurrency,
      timeoutMs: 10_000,
    });
    const startedAt = now();
    const seconds = () => (now() - startedAt) / 1_000;
    try {
      await plan.inject({
        stack,
        figures,
        checks,
        at: async (at) => void (await sleep(Math.max(0, startedAt + at * 1_000 - now()))),
        async fault(what, run) {
          const from = seconds();
          context.progress(`${label}: ${what} at ${from.toFixed(1)} s (${load.acknowledged} acknowledged so far)`);
          await run();
          faults.push({ what, from, to: seconds() });
        },
      });
    } catch (error) {
      await load.stop();
      throw error;
    }
    const lastFaultEnd = Math.max(0, ...faults.map((f) => f.to));
    await sleep(Math.max(0, startedAt + Math.max(plan.seconds, lastFaultEnd + plan.tail) * 1_000 - now()));
    const record = await load.stop();

    const settledAt = Math.max(record.stoppedAt, startedAt + lastFaultEnd * 1_000);
    const committed = await committedResources(stack.cluster);
    context.progress(
      `${label}: load over (${record.acknowledged.length} acknowledged, ${committed.size} committed); draining`,
    );
    const drainedAt = await drain(stack, committed, now() + sizes.drainTimeout * 1_000);
    await ledgerQuiet(stack, 10_000);
    const arrivals = await stack.receiver.call<Arrivals>("arrivals");
    const ledger = await checkLedger({
      cluster: stack.cluster,
      committed,
      load: record,
      webhooks: stack.webhooks,
      arrivals,
    });
    const logs = scanLogs(stack.processes, stack.secrets);
    const samples = latencySamples(record, stack.webhooks, arrivals);
    const firstFault = startedAt + (faults[0]?.from ?? plan.seconds) * 1_000;
    const lastFault = startedAt + (faults.at(-1)?.to ?? plan.seconds) * 1_000;
    const latency = {
      before: latencyBetween(samples, startedAt, firstFault),
      during: latencyBetween(samples, firstFault, lastFault),
      after: latencyBetween(samples, lastFault, lastFault + (plan.afterWindow ?? plan.seconds) * 1_000),
      all: latencyBetween(samples, startedAt, Infinity),
    };
    checks.unshift(...commonChecks(ledger, logs, drainedAt));
    await plan.judge?.({ stack, ledger, samples, loadStartedAt: startedAt, faults, logs, figures, checks });

    const { acknowledged: _acknowledged, ...loadFigures } = record;
    return {
      name: plan.name,
      label,
      title: plan.title,
      run: context.run,
      loadAverage: loadAverage!,
      ok: checks.every((c) => c.ok || (c.timing && options.quick)),
      load: {
        ...loadFigures,
        rate: sizes.rate,
        concurrency: sizes.concurrency,
        answer: distribution(record.acknowledged.map((a) => a.ms)),
      },
      ledger,
      drainMs: drainedAt === undefined ? NaN : Math.max(0, drainedAt - settledAt),
      latency,
      logs,
      faults,
      figures,
      checks,
    };
  } finally {
    await stack.close();
  }
}

/** Waits until every delivery owed to `committed` arrived; resolves with when, or undefined at `deadline`. */
async function drain(stack: DrillStack, committed: ReadonlySet<string>, deadline: number): Promise<number | undefined> {
  for (;;) {
    const arrivals = await stack.receiver.call<Arrivals>("arrivals");
    if (missingDeliveries(committed, stack.webhooks, arrivals) === 0) return now();
    if (now() >= deadline) return undefined;
    await sleep(250);
  }
}

/** Gives the workers a moment to record the last attempts and route jobs, so the ledger's counts are final. */
async function ledgerQuiet(stack: DrillStack, withinMs: number): Promise<void> {
  const deadline = now() + withinMs;
  while (now() < deadline) {
    const [row] = await stack.cluster.query<{ open: number }>(`
      select (select count(*)::int from webhook_dispatch_open o join webhook_dispatch d on d.id = o.dispatch_id
              where d.status = 'pending' or o.locked_until > now())
        + (select count(*)::int from webhook_route_job) as open
    `);
    if (row!.open === 0) return;
    await sleep(250);
  }
}

function commonChecks(ledger: LedgerFigures, logs: LogFigures, drainedAt: number | undefined): Check[] {
  return [
    {
      name: "every acknowledged event delivered to every matching webhook",
      value: `${ledger.lost} lost`,
      ok: ledger.lost === 0,
    },
    {
      name: "every committed mutation's event delivered (caller saw no 2xx)",
      value: `${ledger.lostUnacknowledged} lost (${ledger.committedNotAcknowledged} such mutations)`,
      ok: ledger.lostUnacknowledged === 0,
    },
    {
      name: "no event or 2xx without its committed mutation",
      value: `${ledger.phantom} events, ${ledger.acknowledgedNotCommitted} answers`,
      ok: ledger.phantom === 0 && ledger.acknowledgedNotCommitted === 0,
    },
    { name: "one event id per mutation", value: `${ledger.split} split`, ok: ledger.split === 0 },
    {
      name: "nothing to a webhook that does not hear the event",
      value: `${ledger.misrouted} POSTs`,
      ok: ledger.misrouted === 0,
    },
    { name: "drained before the deadline", value: drainedAt === undefined ? "no" : "yes", ok: drainedAt !== undefined },
    {
      name: "no secret or query parameter in any log",
      value: logs.leaks.length === 0 ? "none" : logs.leaks.join("; "),
      ok: logs.leaks.length === 0,
    },
  ];
}
