/**
 * Mutating routes that deliberately emit no event: the control plane manages
 * webhooks themselves, which are not API transactions a subscriber hears.
 * Every mutating route needs a catalogue entry or a line here.
 */
export const CATALOGUE_EXCLUSIONS: ReadonlyArray<{ method: string; route: string; reason: string }> = [
  { method: "POST", route: "/v3/webhooks", reason: "control plane: registering a webhook is not an API transaction" },
];
