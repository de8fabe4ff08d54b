import { blockedDeprecations, type CatalogueSyncPlan, type SubscribedWebhook } from "./catalogue-sync.ts";

/**
 * The diff as ops read it before anything is applied, one line per event that
 * would change (`+` added, `~` changed, `-` deprecated) and a count of the
 * unchanged ones. Deprecations name every webhook still subscribed to them.
 */
export function formatCatalogueDiff(plan: CatalogueSyncPlan): string[] {
  const width = Math.max(
    0,
    ...[...plan.added, ...plan.changed.map((c) => c.row), ...plan.deprecated.map((d) => d.row)].map(
      (row) => row.internal.length,
    ),
  );
  const line = (mark: string, internal: string, what: string) => `  ${mark} ${internal.padEnd(width)}  ${what}`;
  return [
    ...plan.added.map((row) =>
      line("+", row.internal, `added: ${row.method} ${row.route}${row.deprecated ? " (deprecated)" : ""}`),
    ),
    ...plan.changed.map(({ row, fields }) => line("~", row.internal, `changed: ${fields.join(", ")}`)),
    ...plan.deprecated.map(({ row, subscribers }) =>
      line(
        "-",
        row.internal,
        subscribers.length > 0
          ? `deprecated, still subscribed by ${describeWebhooks(subscribers)}`
          : "deprecated, no webhook names it",
      ),
    ),
    `  = ${plan.unchanged.length} unchanged`,
  ];
}

/** Why a sync without `--force` refuses: one line per deprecation that webhooks still name. */
export function formatRefusal(plan: CatalogueSyncPlan): string[] {
  return blockedDeprecations(plan).map(
    ({ row, subscribers }) =>
      `refusing to deprecate ${row.internal}: still subscribed by ${describeWebhooks(subscribers)}`,
  );
}

/** `12 added, 1 changed, 0 deprecated, 3 unchanged`. */
export function summarizeCatalogueSync(plan: CatalogueSyncPlan): string {
  return [
    `${plan.added.length} added`,
    `${plan.changed.length} changed`,
    `${plan.deprecated.length} deprecated`,
    `${plan.unchanged.length} unchanged`,
  ].join(", ");
}

/** `2 webhooks: wh_1 (account acc_1, active), wh_2 (global, paused)`. */
export function describeWebhooks(webhooks: readonly SubscribedWebhook[]): string {
  const each = webhooks.map(
    (webhook) => `${webhook.id} (${webhook.account ? `account ${webhook.account}` : "global"}, ${webhook.status})`,
  );
  return `${webhooks.length} webhook${webhooks.length === 1 ? "" : "s"}: ${each.join(", ")}`;
}
