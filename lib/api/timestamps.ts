import { z } from "zod";
import { whenFieldsValid } from "./validation-errors.ts";

/** The first and last instants the API accepts: older or later dates are typos or probes, not data. */
export const EARLIEST = "1970-01-01T00:00:00.000Z";
export const LATEST = "9999-12-31T23:59:59.999Z";

/**
 * A timestamp as the API writes it: ISO-8601 in UTC with milliseconds,
 * e.g. `2026-12-01T09:30:00.000Z` (what `Date#toISOString` gives).
 */
export const timestamp = z.iso.datetime({ precision: 3 });

/**
 * A timestamp as a caller may send it: ISO-8601 with `Z` or an offset, at
 * most millisecond precision (what the API stores and answers, so it reads
 * back the same instant), between 1970 and 9999. Range and precision are
 * judged once the format is right: one message per mistake.
 */
export const timestampInput = z.iso
  .datetime({ offset: true })
  .refine((value) => !/\.\d{4,}/.test(value), {
    message: "must have at most millisecond precision (3 decimal places)",
    when: whenFieldsValid,
  })
  .refine(
    (value) => {
      const at = Date.parse(value);
      return at >= Date.parse(EARLIEST) && at <= Date.parse(LATEST);
    },
    { message: `must be between ${EARLIEST} and ${LATEST}`, when: whenFieldsValid },
  );

/** A stored instant, as the API writes it. */
export const iso = (date: Date): string => date.toISOString();

/** A nullable stored instant, as the API writes it. */
export const isoOrNull = (date: Date | null): string | null => (date ? date.toISOString() : null);
