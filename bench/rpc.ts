import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

type Handlers = Record<string, (args: any) => unknown>;

interface Request {
  id: number;
  op: string;
  args: unknown;
}

type Reply = { id: number; result: unknown } | { id: number; error: string } | { ready: unknown };

/**
 * The child side: answers the parent's calls with `handlers` and announces
 * `ready` once. The child exits when the parent goes away, so a crashed
 * benchmark leaves no process behind.
 */
export function serveRpc(handlers: Handlers, ready: unknown = {}): void {
  process.on("message", (message: Request) => {
    const handler = handlers[message.op];
    Promise.resolve()
      .then(() => {
        if (!handler) throw new Error(`unknown operation ${message.op}`);
        return handler(message.args);
      })
      .then(
        (result) => process.send?.({ id: message.id, result } satisfies Reply),
        (error: unknown) =>
          process.send?.({ id: message.id, error: String((error as Error)?.stack ?? error) } satisfies Reply),
      );
  });
  process.on("disconnect", () => process.exit(0));
  process.send?.({ ready } satisfies Reply);
}

export interface RpcChild<Ready> {
  readonly pid: number;
  readonly ready: Ready;
  /** Calls `op` in the child; rejects with the child's error, or after `timeoutMs`. */
  call<T>(op: string, args?: unknown, timeoutMs?: number): Promise<T>;
  /** SIGTERM, then SIGKILL after 5 s; resolves when the child has exited. */
  stop(): Promise<void>;
}

/**
 * Forks `script` (a .ts module beside this file) on this Node, with
 * structured-clone IPC, and waits (at most `readyTimeoutMs`) for its ready message.
 */
export async function forkRpc<Ready>(
  script: string,
  options: { env?: NodeJS.ProcessEnv; execArgv?: string[]; readyTimeoutMs?: number } = {},
): Promise<RpcChild<Ready>> {
  const child = fork(fileURLToPath(new URL(script, import.meta.url)), [], {
    execArgv: options.execArgv ?? [],
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    ...(options.env ? { env: options.env } : {}),
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  let nextId = 1;
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} not ready in time`)), options.readyTimeoutMs ?? 20_000);
    child.once("exit", (code) => reject(new Error(`${script} exited (${code}) before it was ready`)));
    child.on("message", (message: Reply) => {
      if ("ready" in message) {
        clearTimeout(timer);
        resolve(message.ready as Ready);
        return;
      }
      const waiter = pending.get(message.id);
      pending.delete(message.id);
      if ("error" in message) waiter?.reject(new Error(`${script}: ${message.error}`));
      else waiter?.resolve(message.result);
    });
  });
  child.once("exit", (code) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${script} exited (${code})`));
    pending.clear();
  });

  return {
    pid: child.pid!,
    ready,
    call<T>(op: string, args?: unknown, timeoutMs = 300_000) {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`${script} ${op}: no answer in ${timeoutMs} ms`));
        }, timeoutMs);
        pending.set(id, {
          resolve: (value) => {
            clearTimeout(timer);
            resolve(value as T);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        });
        child.send({ id, op, args } satisfies Request);
      });
    },
    stop: () => stopChild(child, exited),
  };
}

/** SIGTERM, SIGKILL after `graceMs`; resolves once the process has exited. */
export async function stopChild(child: ChildProcess, exited: Promise<unknown>, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}
