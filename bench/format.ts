/** 12,345 */
export function count(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString("en") : "—";
}

/** 12.3 ms */
export function ms(value: number): string {
  return Number.isFinite(value) ? `${value < 100 ? value.toFixed(1) : Math.round(value).toLocaleString("en")} ms` : "—";
}

/** 0.987× */
export function ratio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(3)}×` : "—";
}

/** 98.7 % */
export function percent(value: number): string {
  return Number.isFinite(value) ? `${(value * 100).toFixed(1)} %` : "—";
}

/** 123 MB (MiB, as /proc counts) */
export function mb(bytes: number): string {
  return Number.isFinite(bytes) ? `${Math.round(bytes / 1_048_576).toLocaleString("en")} MB` : "—";
}
