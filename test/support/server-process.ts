import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { stopChild } from "../../bench/rpc.ts";

const SERVER = fileURLToPath(new URL("../../app/server.ts", import.meta.url));

export interface ServerProcess {
  readonly pid: number;
  /** Where it listens, from its own start-up line: `http://<address>:<port>`. */
  readonly url: string;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
  /** SIGTERM (it drains), SIGKILL after 10 s. */
  stop(): Promise<void>;
}

/**
 * Runs `node app/server.ts` as `npm start` does, with only `env` (plus PATH
 * and HOME) in a working directory of the test's choosing, so no developer's
 * variables or `.env` file leak in. `started` resolves once it listens,
 * `exited` when it stops on its own (a refusal) first.
 */
export function spawnServer(
  env: Record<string, string>,
  cwd: string,
): { started: Promise<ServerProcess>; exited: Promise<{ code: number | null; output: string }> } {
  const child = spawn(process.execPath, [SERVER], {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
  });
  let output = "";
  const exited = new Promise<{ code: number | null; output: string }>((resolve) =>
    child.once("exit", (code) => resolve({ code, output })),
  );
  const started = new Promise<ServerProcess>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const listening = /hooklane API on (http:\/\/\S+:\d+)/.exec(output);
      if (!listening) return;
      child.stdout.off("data", onData);
      child.stdout.on("data", (more: Buffer) => (output += more.toString("utf8")));
      resolve({
        pid: child.pid!,
        url: listening[1]!,
        output: () => output,
        stop: () => stopChild(child, exited, 10_000),
      });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    void exited.then(({ code }) => reject(new Error(`the server exited with ${code} before listening:\n${output}`)));
  });
  // A refusal is what some tests wait for: a rejected `started` is theirs to read, never unhandled.
  started.catch(() => {});
  return { started, exited };
}
