import { createHmac } from "node:crypto";
import pg from "pg";
import { Agent, request } from "undici";
import type { PeerJob, PeerWorkerConfig } from "./peer-ledger.ts";

export interface PeerDeliverer {
  /** Signs and POSTs one job and records the outcome in the ledger; throws on failure so the queue retries. */
  deliver(job: PeerJob): Promise<void>;
  close(): Promise<void>;
}

/**
 * What both peers do per job, written the way a team would: HMAC-SHA256 over
 * `<t>.<body>` (the same scheme as hooklane's), a keep-alive POST with a 10 s
 * deadline (undici's `request` follows no redirects), then one UPDATE of the ledger row.
 */
export function createPeerDeliverer(config: PeerWorkerConfig): PeerDeliverer {
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 10, application_name: "bench-peer" });
  const agent = new Agent({ connections: config.connections, keepAliveTimeout: 30_000 });

  async function record(job: PeerJob, statusCode: number | null, error: string | null): Promise<void> {
    await pool.query(
      error === null
        ? `update peer_delivery set status = 'success', attempts = attempts + 1, last_status_code = $2,
             last_error = null, delivered_at = now() where id = $1`
        : `update peer_delivery set status = 'error', attempts = attempts + 1, last_status_code = $2,
             last_error = $3 where id = $1`,
      error === null ? [job.deliveryId, statusCode] : [job.deliveryId, statusCode, error],
    );
  }

  return {
    async deliver(job) {
      const timestamp = Math.floor(Date.now() / 1_000);
      const signature = createHmac("sha256", config.secret).update(`${timestamp}.${job.payload}`).digest("hex");
      let statusCode: number | null = null;
      try {
        const response = await request(job.url, {
          method: "POST",
          dispatcher: agent,
          signal: AbortSignal.timeout(10_000),
          headers: {
            "content-type": "application/json",
            "user-agent": "Peer-Webhooks/1.0",
            "peer-event-id": job.eventId,
            "peer-signature": `t=${timestamp},v1=${signature}`,
          },
          body: job.payload,
        });
        statusCode = response.statusCode;
        await response.body.dump();
        if (statusCode < 200 || statusCode >= 300) throw new Error(`HTTP ${statusCode}`);
      } catch (error) {
        await record(job, statusCode, String((error as Error).message));
        throw error;
      }
      await record(job, statusCode, null);
    },
    async close() {
      await agent.close();
      await pool.end();
    },
  };
}
