import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../config/env.ts";

/** The file in an embedded database's folder that names the process holding it. */
export const DATA_DIR_LOCK = "hooklane.lock";

/**
 * Takes the embedded database's folder for this process, or throws a
 * ConfigError naming the process that holds it. PGlite is one process's
 * database: a second process on the same folder would see only its own
 * writes, and the last to stop would win. A lock left by a process that died
 * is taken over. Returns what gives it back.
 */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, DATA_DIR_LOCK);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, String(process.pid), { flag: "wx" });
      return () => {
        try {
          if (readFileSync(path, "utf8") === String(process.pid)) unlinkSync(path);
        } catch {
          // Already gone: nothing to give back.
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number.parseInt(readFileSync(path, "utf8"), 10);
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
        throw new ConfigError(
          `PGLITE_DATA_DIR: the embedded database in ${dataDir} is in use by process ${holder} (another npm start?): ` +
            `stop it first, or set PGLITE_DATA_DIR to another folder (if no such process is hooklane, delete ${path})`,
        );
      }
      // Its process is gone: the lock is stale.
      try {
        unlinkSync(path);
      } catch {
        // Another starter removed it first: try again.
      }
    }
  }
  throw new ConfigError(`PGLITE_DATA_DIR: could not take ${path}; another process keeps taking it`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
