/**
 * Mutating routes that deliberately emit no event: the control plane manages
 * webhooks themselves, which are not API transactions a subscriber hears.
 * Every mutating route needs a catalogue entry or a line here.
 */
export const CATALOGUE_EXCLUSIONS: ReadonlyArray<{ method: string; route: string; reason: string }> = [
  { method: "POST", route: "/v3/webhooks", reason: "control plane: registering a webhook is not an API transaction" },
  { method: "PATCH", route: "/v3/webhooks/:id", reason: "control plane: changing a webhook" },
  { method: "DELETE", route: "/v3/webhooks/:id", reason: "control plane: deleting a webhook" },
  { method: "POST", route: "/v3/webhooks/:id/rotate-secret", reason: "control plane: rotating a webhook's secret" },
  {
    method: "POST",
    route: "/v3/webhooks/:id/expire-previous-secret",
    reason: "control plane: ending a rotation's overlap",
  },
  {
    method: "POST",
    route: "/v3/webhook-signing-keys/rotate",
    reason: "control plane: a new ed25519 key for an account's webhooks",
  },
  { method: "POST", route: "/v3/webhooks/:id/test", reason: "control plane: sends its own webhook.test event" },
  {
    method: "POST",
    route: "/v3/webhooks/:id/request-consent",
    reason: "control plane: asking a webhook's endpoint for its consent",
  },
  { method: "POST", route: "/v3/webhooks/:id/recover", reason: "control plane: redelivering past events" },
  { method: "POST", route: "/v3/webhook-dispatches/:id/retry", reason: "control plane: redelivering one event" },
  {
    method: "POST",
    route: "/v3/listen-sessions",
    reason: "control plane: starting a listen session (`npm run listen`)",
  },
  { method: "DELETE", route: "/v3/listen-sessions/:id", reason: "control plane: ending a listen session" },
  {
    method: "POST",
    route: "/v3/portal-sessions",
    reason: "control plane: opening the webhooks portal for an account",
  },
  { method: "DELETE", route: "/v3/portal-sessions/:id", reason: "control plane: revoking a portal session" },
  {
    method: "POST",
    route: "/v3/portal-sessions/revoke-all",
    reason: "control plane: revoking an account's portal sessions",
  },
  {
    method: "POST",
    route: "/v3/listen-sessions/:id/results",
    reason: "control plane: recording a listen session's attempts",
  },
  { method: "POST", route: "/v3/webhooks/filter-preview", reason: "control plane: judging a filter, storing nothing" },
  { method: "POST", route: "/v3/webhook-resends", reason: "control plane: redelivering past events of one type" },
  { method: "POST", route: "/v3/poison-messages/:id/replay", reason: "control plane: the lane's own message, again" },
];
