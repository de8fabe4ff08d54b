import { eq } from "drizzle-orm";
import { z } from "zod";
import { lastStatements, ok, type ApiContext } from "../../../lib/api/handler.ts";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { notFound } from "../../../lib/api/problem.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";
import { generalAddress, type GeneralAddress } from "../../../lib/db/schema.ts";
import { changesSomething, deleted, deletedSchema, idParams, newRowId } from "./resource-fields.ts";

const EXAMPLE = {
  id: "addr_9d8c7b6a5f4e4d3c2b1a0f9e8d7c6b5a",
  object: "general.address",
  line1: "1 Gran Vía",
  city: "Madrid",
  country: "ES",
  created: "2026-12-01T09:30:00.000Z",
} as const;

export const generalAddressSchema = z
  .strictObject({
    id: z.string().describe("`addr_…`"),
    object: z.literal("general.address"),
    line1: z.string().describe("The address's first line, free text (e.g. `1 Gran Vía`)."),
    city: z.string().describe("The city, free text."),
    country: z.string().describe("ISO 3166-1 alpha-2, upper case."),
    created: timestamp,
  })
  .meta({ id: "GeneralAddress", examples: [EXAMPLE] });

export function presentGeneralAddress(row: GeneralAddress): z.output<typeof generalAddressSchema> {
  return {
    id: row.id,
    object: "general.address",
    line1: row.line1,
    city: row.city,
    country: row.country,
    created: iso(row.createdAt),
  };
}

const fields = {
  line1: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .describe("The address's first line, free text (e.g. `1 Gran Vía`); surrounding spaces are trimmed."),
  city: z.string().trim().min(1).max(100).describe("The city, free text; surrounding spaces are trimmed."),
  country: z
    .string()
    .regex(/^[A-Za-z]{2}$/, "must be a 2-letter ISO 3166-1 code")
    .transform((code) => code.toUpperCase())
    .describe("ISO 3166-1 alpha-2 code, in any case; stored upper case."),
};

const createAddress = z
  .strictObject(fields)
  .meta({ examples: [{ line1: "1 Gran Vía", city: "Madrid", country: "ES" }] });

const updateAddress = z
  .strictObject(fields)
  .partial()
  .refine(...changesSomething)
  .meta({ examples: [{ city: "Sevilla" }] });

const addressParams = idParams("The address's id (`addr_…`).");

/** General addresses belong to no account: any authenticated caller may manage them. */
export function addGeneralAddressRoutes(router: OperationRouter): void {
  const tag = "General addresses";
  const requested = (c: ApiContext) => eq(generalAddress.id, c.req.param("id") ?? "");

  router.add(
    {
      method: "post",
      path: "/v3/general-addresses",
      operationId: "createGeneralAddress",
      summary: "Create a general address",
      description: "Emits `general.address.created` (heard by global webhooks only: no account owns it).",
      tag,
      body: createAddress,
      responses: { 201: { description: "The new address.", schema: generalAddressSchema } },
    },
    async (c, { body }) => {
      const id = newRowId("addr");
      const [row] = await lastStatements(c, id, 1, () =>
        c
          .get("database")
          .db.insert(generalAddress)
          .values({ ...body, id })
          .returning(),
      );
      return ok(c, presentGeneralAddress(row!), 201);
    },
  );

  router.add(
    {
      method: "patch",
      path: "/v3/general-addresses/:id",
      operationId: "updateGeneralAddress",
      summary: "Update a general address",
      description: "Emits `general.address.updated`.",
      tag,
      params: addressParams,
      body: updateAddress,
      responses: { 200: { description: "The updated address.", schema: generalAddressSchema } },
    },
    async (c, { body }) => {
      const [row] = await c.get("database").db.update(generalAddress).set(body).where(requested(c)).returning();
      if (!row) throw notFound("general address");
      return ok(c, presentGeneralAddress(row));
    },
  );

  router.add(
    {
      method: "delete",
      path: "/v3/general-addresses/:id",
      operationId: "deleteGeneralAddress",
      summary: "Delete a general address",
      description: "Emits `general.address.purged`.",
      tag,
      params: addressParams,
      responses: {
        200: {
          description: "Deleted.",
          schema: deletedSchema("general.address", "DeletedGeneralAddress", EXAMPLE.id),
        },
      },
    },
    async (c) => {
      const [row] = await c
        .get("database")
        .db.delete(generalAddress)
        .where(requested(c))
        .returning({ id: generalAddress.id });
      if (!row) throw notFound("general address");
      return ok(c, deleted("general.address", row.id));
    },
  );

  // Subscribers get identifiers only and read the resource back here.
  router.add(
    {
      method: "get",
      path: "/v3/general-addresses/:id",
      operationId: "getGeneralAddress",
      summary: "Get a general address",
      tag,
      params: addressParams,
      responses: { 200: { description: "The address.", schema: generalAddressSchema } },
    },
    async (c) => {
      const [row] = await c.get("database").db.select().from(generalAddress).where(requested(c));
      if (!row) throw notFound("general address");
      return c.json(presentGeneralAddress(row));
    },
  );
}
