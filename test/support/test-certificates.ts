import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface TestCertificates {
  /** The throwaway CA's certificate (PEM), to trust in the client under test. */
  ca: string;
  /** A key and a certificate signed by the CA, valid for exactly these DNS names. */
  issue(names: readonly string[]): Promise<{ key: string; cert: string }>;
  dispose(): Promise<void>;
}

/** Creates a one-day CA in a temporary folder with the `openssl` CLI. */
export async function createTestCertificates(): Promise<TestCertificates> {
  const dir = await mkdtemp(join(tmpdir(), "hooklane-tls-"));
  const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await run("openssl", [
    "req",
    "-x509",
    ...ecKey,
    "-keyout",
    join(dir, "ca.key"),
    "-out",
    join(dir, "ca.crt"),
    "-subj",
    "/CN=hooklane test CA",
    "-days",
    "1",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign",
  ]);
  let issued = 0;
  return {
    ca: await readFile(join(dir, "ca.crt"), "utf8"),
    async issue(names) {
      const base = join(dir, `leaf-${++issued}`);
      await writeFile(`${base}.ext`, `subjectAltName=${names.map((name) => `DNS:${name}`).join(",")}\n`);
      await run("openssl", [
        "req",
        ...ecKey,
        "-keyout",
        `${base}.key`,
        "-out",
        `${base}.csr`,
        "-subj",
        `/CN=${names[0]}`,
      ]);
      await run("openssl", [
        "x509",
        "-req",
        "-in",
        `${base}.csr`,
        "-CA",
        join(dir, "ca.crt"),
        "-CAkey",
        join(dir, "ca.key"),
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        `${base}.ext`,
        "-out",
        `${base}.crt`,
      ]);
      return { key: await readFile(`${base}.key`, "utf8"), cert: await readFile(`${base}.crt`, "utf8") };
    },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}
