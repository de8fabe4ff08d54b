import { sql } from "drizzle-orm";
import { afterAll, expect, it } from "vitest";
import { neonFactory, startNeonWebSocketProxy } from "../support/neon-ws-proxy.ts";
import { describePipeline } from "../support/pipeline-contract.ts";

const proxy = await startNeonWebSocketProxy();
afterAll(() => proxy.close());

describePipeline("PostgreSQL through Neon's serverless driver", neonFactory(proxy));

it("speaks to the database through the WebSocket proxy", async () => {
  const before = proxy.connections;
  const { database, drop } = await neonFactory(proxy)();
  expect(database.kind).toBe("neon");
  expect(await database.rows(sql`select 1 as one`)).toEqual([{ one: 1 }]);
  expect(proxy.connections).toBeGreaterThan(before);
  await database.close();
  await drop();
});
