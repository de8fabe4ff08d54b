import { expect } from "vitest";
import { pgliteFactory, startHarness, type Harness } from "./harness.ts";
import { startReceiver, type Reply, type TestReceiver } from "./receiver.ts";

export interface SubscribedHarness {
  harness: Harness;
  receiver: TestReceiver;
  /** acc_alice's webhook for every event, pointed at `receiver`. */
  webhookId: string;
  close(): Promise<void>;
}

/**
 * The vercel driver on the emulated queue service, with a receiver answering
 * `reply` and one webhook of `acc_alice` (which exists) for every event
 * pointed at it. With `account`, acc_alice is renamed too (its
 * `account.updated` is published).
 */
export async function startSubscribedHarness(
  options: { reply?: () => Reply; env?: Record<string, string>; lane?: boolean; account?: boolean } = {},
): Promise<SubscribedHarness> {
  const receiver = await startReceiver(options.reply);
  const harness = await startHarness(pgliteFactory, {
    driver: "vercel",
    env: options.env ?? {},
    ...(options.lane === undefined ? {} : { lane: options.lane }),
  });
  const close = async () => {
    await harness.close();
    await receiver.close();
  };
  await harness.accounts("acc_alice");
  const hook = await harness.call("POST", "/v3/webhooks", {
    account: "acc_alice",
    body: { url: `${receiver.url}/hook`, events: ["*"] },
  });
  expect(hook.status).toBe(201);
  if (options.account) {
    const account = await harness.call("PATCH", "/v3/accounts/acc_alice", {
      account: "acc_ops",
      admin: true,
      body: { name: "Alice" },
    });
    expect(account.status).toBe(200);
    await harness.settled();
  }
  return { harness, receiver, webhookId: hook.body.id as string, close };
}
