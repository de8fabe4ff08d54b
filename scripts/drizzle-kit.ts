/** `npx` arguments for drizzle-kit to write the migration lib/db/schema.ts calls for into `out`, named `name`. */
export function drizzleGenerateArgs(out: string, name: string, flags: readonly string[] = []): string[] {
  const schema = ["--dialect", "postgresql", "--schema", "./lib/db/schema.ts"];
  return ["drizzle-kit", "generate", ...schema, "--out", out, "--name", name, ...flags];
}
