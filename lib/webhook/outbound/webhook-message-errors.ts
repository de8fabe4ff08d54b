/** A message that can never succeed (bad schema, unknown event): recorded and acknowledged, never retried. */
export class PoisonMessageError extends Error {
  override name = "PoisonMessageError";
}
