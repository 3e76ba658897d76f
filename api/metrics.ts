/**
 * Prometheus metrics (prom-client), one registry per process, shared by web, worker and reporting:
 * the process's default metrics plus what each process measures. Every process answers
 * `GET /metrics` in Prometheus text format (the worker on WORKER_METRICS_PORT).
 */
import client from 'prom-client';

export const registry = new client.Registry();
let defaultsCollected = false;

/**
 * Collects the process's default metrics (CPU, memory, event loop) once. Which process a series
 * comes from is the scraper's `job`/`instance` label.
 */
export function initMetrics(): void {
  if (!defaultsCollected) {
    client.collectDefaultMetrics({ register: registry, prefix: 'settle_' });
    defaultsCollected = true;
  }
}

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

// ---- web ------------------------------------------------------------------------------------
export const httpRequests = new client.Counter({
  name: 'settle_http_requests_total',
  help: 'HTTP requests answered, by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});
export const httpDuration = new client.Histogram({
  name: 'settle_http_request_duration_seconds',
  help: 'HTTP request latency, by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: SECONDS_BUCKETS,
  registers: [registry],
});

// ---- worker ---------------------------------------------------------------------------------
export const deliveries = new client.Counter({
  name: 'settle_webhook_deliveries_total',
  help: 'Webhook delivery attempts, by outcome (delivered, retry, failed, gone)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
export const deferrals = new client.Counter({
  name: 'settle_webhook_deferrals_total',
  help: "Webhook deliveries put off without an attempt, by reason (no_room: their org's receivers are slow and its slots here are taken; rate_limit: their webhook's rate; earlier_attempt: an earlier run of the delivery in the process is still to record its answer)",
  labelNames: ['reason'] as const,
  registers: [registry],
});
export const deliveryDuration = new client.Histogram({
  name: 'settle_webhook_delivery_duration_seconds',
  help: 'Time from sending a webhook to its answer (or failure)',
  labelNames: ['outcome'] as const,
  buckets: SECONDS_BUCKETS,
  registers: [registry],
});
export const timedRuns = new client.Counter({
  name: 'settle_timed_runs_total',
  help: 'Runs of timed work (billing days, retention), by task and result',
  labelNames: ['task', 'result'] as const,
  registers: [registry],
});

/** A gauge read when scraped (queue depth, mirror lag): `read` returns label sets and values. */
export function gaugeOnScrape(name: string, help: string, labelNames: string[], read: () => Promise<Array<[Record<string, string>, number]>> | Array<[Record<string, string>, number]>): void {
  registry.removeSingleMetric(name);
  new client.Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [labels, value] of await read()) this.set(labels, value);
    },
  });
}

export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
