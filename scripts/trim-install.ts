// `npm install`'s last step (postinstall): drops the C headers the pinned Node's package keeps beside its binary
// (node_modules/node/node_modules/node-<platform>-<arch>/include, ~67 MB). They only serve to compile native addons,
// which nothing here does; `npm ci` leaves them out already, so both installs end the same. Never fails an install.

import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";

const nested = join(import.meta.dirname, "..", "node_modules", "node", "node_modules");
try {
  const platformPackages = existsSync(nested) ? readdirSync(nested).filter((name) => name.startsWith("node-")) : [];
  for (const name of platformPackages) rmSync(join(nested, name, "include"), { recursive: true, force: true });
} catch (error) {
  console.warn(`[trim-install] left as installed: ${(error as Error).message}`);
}
