import { parseArgs } from "node:util";

export const DRILLS = ["api-kill", "worker-kill", "pg-restart", "pg-stop", "receiver-down", "worker-term"] as const;
export type DrillName = (typeof DRILLS)[number];

/** How big each drill is; `--quick` shrinks everything to fit CI. Times are seconds from the start of the load. */
export interface DrillSizes {
  /** Requests started per second, and in flight at most. */
  rate: number;
  concurrency: number;
  /** `every`: seconds of load before the first kill, and between a new process being up and the next kill. */
  apiKill: { runs: number; kills: number; every: number };
  workerKill: { kills: number; every: number };
  pgRestart: { at: number; seconds: number; afterWindow: number };
  pgStop: { at: number; down: number; seconds: number };
  receiverDown: { at: number; down: number; seconds: number };
  workerTerm: { at: number; seconds: number };
  /** How long the pipeline may take to deliver everything once the load and the faults are over. */
  drainTimeout: number;
}

const FULL: DrillSizes = {
  rate: 100,
  concurrency: 32,
  apiKill: { runs: 3, kills: 7, every: 4 },
  workerKill: { kills: 6, every: 5 },
  pgRestart: { at: 15, seconds: 40, afterWindow: 20 },
  pgStop: { at: 10, down: 5, seconds: 30 },
  receiverDown: { at: 8, down: 15, seconds: 35 },
  workerTerm: { at: 10, seconds: 25 },
  drainTimeout: 120,
};

const QUICK: DrillSizes = {
  rate: 50,
  concurrency: 32,
  apiKill: { runs: 1, kills: 3, every: 3 },
  workerKill: { kills: 2, every: 4 },
  pgRestart: { at: 5, seconds: 17, afterWindow: 10 },
  pgStop: { at: 4, down: 5, seconds: 14 },
  receiverDown: { at: 3, down: 5, seconds: 12 },
  workerTerm: { at: 4, seconds: 9 },
  drainTimeout: 60,
};

export interface DrillOptions {
  quick: boolean;
  drills: readonly DrillName[];
  sizes: DrillSizes;
  /** Lane workers beside the API. */
  workers: number;
  /** `WEBHOOK_RETRY_SCHEDULE` of every product process. */
  retrySchedule: string;
}

export const USAGE = `usage: npm run drill -- [--quick] [--workers N] [--only ${DRILLS.join(",")}]
  --workers  lane workers beside the API, 1 to 8 (default 2)
  PG_BIN  folder of initdb and pg_ctl (default: the newest /usr/lib/postgresql/<version>/bin)`;

/** Parses the command line; throws with the usage on anything it does not know. */
export function parseDrillOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): DrillOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: "boolean", default: false },
      only: { type: "string" },
      workers: { type: "string", default: "2" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) throw new Error(USAGE);
  const only = values.only?.split(",").map((s) => s.trim());
  for (const name of only ?? []) {
    if (!(DRILLS as readonly string[]).includes(name)) throw new Error(`unknown drill ${name}\n${USAGE}`);
  }
  const workers = Number(values.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 8)
    throw new Error(`--workers ${values.workers}: 1 to 8\n${USAGE}`);
  // `npm run drill --quick` (without `--`) reaches us only as npm's own config variable.
  const quick = values.quick || env.npm_config_quick === "true";
  return {
    quick,
    drills: (only as DrillName[] | undefined) ?? DRILLS,
    sizes: quick ? QUICK : FULL,
    workers,
    retrySchedule: "1s,2s,4s,8s,16s",
  };
}
