/**
 * The worker's metrics: deliveries and timed runs are counted where they happen; the queue's depth
 * and lag are read when scraped. Served on WORKER_METRICS_PORT (`GET /metrics`) when set.
 */
import http from 'node:http';
import type { Db } from '../api/db/connection.ts';
import { queueDepth } from '../api/db/jobQueue.ts';
import { gaugeOnScrape, initMetrics, metricsText } from '../api/metrics.ts';

export async function startWorkerMetrics(db: Db, port: number, host: string): Promise<http.Server | null> {
  initMetrics();
  let depth: Awaited<ReturnType<typeof queueDepth>> = [];
  const read = async () => (depth = await queueDepth(db).catch(() => depth));
  gaugeOnScrape('settle_job_queue_depth', 'Jobs due and waiting for a worker, by task', ['task'], async () => (await read()).map((d) => [{ task: d.task }, d.waiting]));
  gaugeOnScrape('settle_job_queue_lag_seconds', 'How long the oldest due job of each task has waited', ['task'], () => depth.map((d) => [{ task: d.task }, d.lagSeconds]));
  if (!port) return null;
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    metricsText().then(({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body), () => res.writeHead(503).end());
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  return server;
}
