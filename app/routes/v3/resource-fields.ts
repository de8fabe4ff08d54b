import { randomUUID } from "node:crypto";
import { z } from "zod";
import { whenFieldsValid } from "../../../lib/api/validation-errors.ts";

/** The `:id` of one object, e.g. `idParams("The payment debt's id (`pd_…`).")`. */
export const idParams = (description: string) => z.object({ id: z.string().min(1).max(100).describe(description) });

/**
 * What a DELETE answers: `{ id, object, deleted: true }`, the object named
 * as it was (`object` is the resource's own name).
 */
export function deletedSchema<const O extends string>(object: O, schemaId: string, exampleId: string) {
  return z
    .strictObject({ id: z.string(), object: z.literal(object), deleted: z.literal(true) })
    .meta({ id: schemaId, examples: [{ id: exampleId, object, deleted: true }] });
}

/**
 * A new row's id as the table's column default makes it, `prefix_` and a
 * random UUID's 32 hex digits, for a route that names the row it creates
 * before creating it (`lastStatements()`).
 */
export function newRowId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll("-", "")}`;
}

export const deleted = <const O extends string>(object: O, id: string) => ({ id, object, deleted: true as const });

/**
 * For a PATCH body, `.refine(...changesSomething)`: refuses `{}`, once every
 * field sent is valid (an unknown field is reported as such, not as no change).
 */
export const changesSomething = [
  (body: object) => Object.keys(body).length > 0,
  { message: "must change at least one field", when: whenFieldsValid },
] as const;
