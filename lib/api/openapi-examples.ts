type JsonSchema = Record<string, any>;

const NOT_SAMPLED = Symbol("not sampled");
const SAMPLE_TIME = "2026-12-01T09:30:00.000Z";

/**
 * An example value for a JSON Schema of the document: the schema's own
 * `examples[0]` (or `example`) wherever one is written, otherwise built from
 * its shape (`const`, the first of an `enum`, every property of an object, one
 * item of an array). `$ref`s are followed into `components`; a cycle or an
 * unusually deep schema ends in `null`.
 */
export function exampleOf(schema: JsonSchema, components: Record<string, JsonSchema>, depth = 0): unknown {
  if (depth > 12) return null;
  const next = (s: JsonSchema) => exampleOf(s, components, depth + 1);
  if (typeof schema.$ref === "string") {
    const target = components[schema.$ref.replace("#/components/schemas/", "")];
    return target ? next(target) : null;
  }
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.example !== undefined) return schema.example;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  for (const key of ["anyOf", "oneOf"] as const) {
    if (Array.isArray(schema[key])) {
      const options = schema[key] as JsonSchema[];
      return next(options.find((option) => option.type !== "null") ?? options[0]!);
    }
  }
  if (Array.isArray(schema.allOf)) {
    return Object.assign({}, ...schema.allOf.map((part: JsonSchema) => next(part) as object));
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
  const sampled = sampleOfType(type, schema, next);
  return sampled === NOT_SAMPLED ? null : sampled;
}

function sampleOfType(type: unknown, schema: JsonSchema, next: (s: JsonSchema) => unknown): unknown {
  switch (type) {
    case "object":
      return Object.fromEntries(
        Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>).map(([name, p]) => [name, next(p)]),
      );
    case "array":
      return schema.items ? [next(schema.items)] : [];
    case "string":
      return schema.format === "date-time"
        ? SAMPLE_TIME
        : schema.format === "date"
          ? SAMPLE_TIME.slice(0, 10)
          : "string";
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 1;
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return NOT_SAMPLED;
  }
}
