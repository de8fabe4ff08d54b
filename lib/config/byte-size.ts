const UNITS: Record<string, number> = { b: 1, kb: 1_024, mb: 1_048_576 };

/** Parses `512kb`, `1mb` (binary units: 1 kb = 1,024 bytes) or a bare number of bytes. */
export function parseByteSize(text: string): number {
  const match = /^(\d+)\s*(b|kb|mb)?$/i.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a size (use e.g. 512kb, 1mb, or bytes)`);
  return Number(match[1]) * UNITS[(match[2] ?? "b").toLowerCase()]!;
}
