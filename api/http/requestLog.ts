/**
 * The request log (CONTRACT §20), web side. Each answered API request becomes one row, queued in
 * memory and shipped to the reporting process in batches, off the request path: a request never
 * waits for the log. While reporting is down the queue holds rows (at most SETTLE_REQUEST_LOG_BUFFER)
 * and ships them when it is back; past the bound the oldest rows are dropped and counted in
 * `settle_request_log_dropped_total` on /metrics. `GET /request_logs` first ships what this process
 * holds, then asks reporting, so a client reads its own requests.
 *
 * On the request path a row is only the request's values (`RequestLogTuple`: strings and numbers,
 * the time as the store reads it), queued as the bytes of its JSON text, outside the JavaScript
 * heap (`RowQueue`): rows wait seconds, and the collector never traces them. A shipment is those
 * rows as lines under a line of the column names (`application/x-ndjson`), posted with node:http
 * (kept alive): the lines are what the store parses (ClickHouse's JSONCompactEachRow), so
 * reporting hands them on without parsing them itself.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import client from 'prom-client';
import type { Config } from '../config.ts';
import { maskCredentials } from '../credentials.ts';
import { badRequest, serviceUnavailable } from '../errors.ts';
import { REQUEST_LOG_SHIPPED, requestLogs, storedLogTime, type RequestLogTuple } from '../families/request_logs/family.ts';
import { registry } from '../metrics.ts';
import { isAggregateQuery } from '../engine/operations.ts';
import { parseListQuery } from '../query/listQuery.ts';
import { aggregateAsCsv, rowsAsCsv } from './csvExport.ts';
import { routeOf } from './metricsRoute.ts';
import type { RequestState } from './state.ts';

const dropped = new client.Counter({
  name: 'settle_request_log_dropped_total',
  help: 'Request log rows dropped because the buffer was full while reporting could not take them',
  registers: [registry],
});

/**
 * A shipment holds at most SHIPMENT_ROWS rows and about SHIPMENT_BYTES (half reporting's
 * INGEST_MAX_ROWS and INGEST_MAX_BYTES; one that an earlier reporting refuses as too large goes
 * again in halves, and later ones keep to the size it took), and a partial one goes FLUSH_MS after
 * its first row: each insert costs the store about as much as thousands of rows (a part of files
 * on disk, merged later), so fewer, larger ones leave its CPU to the requests. A busy process
 * ships every FLUSH_MS: at 12,000 requests a second, about 24,000 rows at a time.
 */
const SHIPMENT_ROWS = 50_000;
const SHIPMENT_BYTES = 16 * 1024 * 1024;
const FLUSH_MS = 2000;
const RETRY_MS = 1000;
/** Paths that are not API requests: pages, their assets, and the probes. */
const UNLOGGED = /^\/(console|healthz$|metrics$|client\.js$|elements\/|checkout|pay\/|enroll|docs)/;

/** A shipment's first line: the names of the columns its rows hold, in order. */
const SHIPMENT_HEAD = Buffer.from(`${JSON.stringify(REQUEST_LOG_SHIPPED)}\n`);

/** Reporting refused a shipment for its size (413): fewer rows at a time go. */
class ShipmentTooLarge extends Error {}

/** Rows are written into slabs of this many bytes (a longer row gets a slab of its own). */
const SLAB_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;

/** Emptied slabs kept for new rows, at most (a busy process's 2 s of rows fill about 6). */
const SPARE_SLABS = 16;

/**
 * Queued rows, oldest first, as the bytes they are shipped as: each row's JSON text and a newline,
 * written into slabs outside the JavaScript heap the moment it is queued, so the collector never
 * traces a waiting row and a row's text dies young. Rows leave from the front (shipped, or dropped
 * past the bound); a slab whose last row has left is written again. Slabs are reused rather than
 * allocated afresh, so a steady stream of rows allocates its memory once: V8 counts memory outside
 * its heap towards starting full collections.
 *
 * A shipment under way writes the slabs' bytes as they are (`hold` … `release`): meanwhile an
 * emptied slab waits rather than taking new rows.
 */
class RowQueue {
  #slabs: Array<{ bytes: Buffer; start: number; end: number }> = [];
  #spare: Buffer[] = [];
  /** slabs emptied while a shipment is under way; null when none is */
  #held: Buffer[] | null = null;
  /** each queued row's length in bytes (its newline included), a ring from #head */
  #lengths = new Uint32Array(1024);
  #head = 0;
  length = 0;
  bytes = 0;

  push(text: string): void {
    // At most 3 bytes a UTF-16 unit, and the newline.
    const most = text.length * 3 + 1;
    let slab = this.#slabs.at(-1);
    if (!slab || slab.bytes.length - slab.end < most) {
      const spare = most <= SLAB_BYTES ? this.#spare.pop() : undefined;
      slab = { bytes: spare ?? Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, most)), start: 0, end: 0 };
      this.#slabs.push(slab);
    }
    const written = slab.bytes.write(text, slab.end, 'utf8') + 1;
    slab.bytes[slab.end + written - 1] = NEWLINE;
    slab.end += written;
    if (this.length === this.#lengths.length) this.#grow();
    this.#lengths[(this.#head + this.length) % this.#lengths.length] = written;
    this.length++;
    this.bytes += written;
  }

  #grow(): void {
    const lengths = new Uint32Array(this.#lengths.length * 2);
    for (let i = 0; i < this.length; i++) lengths[i] = this.#lengths[(this.#head + i) % this.#lengths.length]!;
    this.#lengths = lengths;
    this.#head = 0;
  }

  #length(index: number): number {
    return this.#lengths[(this.#head + index) % this.#lengths.length]!;
  }

  /**
   * The front's rows as byte ranges of their slabs, at most `rows` of them and `maxBytes` (one row
   * more when the first alone is more). The ranges keep their bytes until `release`.
   */
  hold(rows: number, maxBytes: number): { rows: number; chunks: Buffer[] } {
    this.#held ??= [];
    const chunks: Buffer[] = [];
    let n = 0;
    let bytes = 0;
    let slab = 0;
    let from = this.#slabs[0]?.start ?? 0;
    let to = from;
    while (n < Math.min(rows, this.length)) {
      const length = this.#length(n);
      if (n > 0 && bytes + length > maxBytes) break;
      // Rows never straddle slabs: a row past this slab's written end is in the next one.
      if (to >= this.#slabs[slab]!.end) {
        chunks.push(this.#slabs[slab]!.bytes.subarray(from, to));
        slab++;
        from = to = 0;
      }
      to += length;
      bytes += length;
      n++;
    }
    if (to > from) chunks.push(this.#slabs[slab]!.bytes.subarray(from, to));
    return { rows: n, chunks };
  }

  /** The shipment is over: slabs emptied meanwhile take new rows again. */
  release(): void {
    for (const bytes of this.#held ?? []) this.#recycle(bytes);
    this.#held = null;
  }

  #recycle(bytes: Buffer): void {
    if (this.#held) this.#held.push(bytes);
    else if (bytes.length === SLAB_BYTES && this.#spare.length < SPARE_SLABS) this.#spare.push(bytes);
  }

  dropFront(count: number): void {
    for (let left = Math.min(count, this.length); left > 0; left--) {
      const length = this.#lengths[this.#head]!;
      this.#head = (this.#head + 1) % this.#lengths.length;
      this.length--;
      this.bytes -= length;
      const slab = this.#slabs[0]!;
      slab.start += length;
      if (slab.start < slab.end) continue;
      if (this.#slabs.length === 1 && !this.#held) {
        slab.start = slab.end = 0;
      } else {
        this.#slabs.shift();
        this.#recycle(slab.bytes);
      }
    }
  }
}

export class RequestLogShipper {
  readonly #url: URL;
  readonly #agent: http.Agent;
  readonly #secret: string | undefined;
  readonly #capacity: number;
  readonly #log: Logger;
  /** the queued rows, as the bytes of their JSON texts */
  #rows = new RowQueue();
  #timer: NodeJS.Timeout | null = null;
  #shipping: Promise<void> | null = null;
  /** rows dropped from the front since the shipment under way took its batch */
  #droppedWhileShipping = 0;
  #down = false;
  /** the most rows a shipment carries: SHIPMENT_ROWS, or what an earlier reporting took */
  #rowsAtMost = SHIPMENT_ROWS;

  constructor(url: string, secret: string | undefined, capacity: number, log: Logger) {
    this.#url = new URL(`${url}/request_logs`);
    this.#agent = new (this.#url.protocol === 'https:' ? https : http).Agent({ keepAlive: true, maxSockets: 1 });
    this.#secret = secret;
    this.#capacity = capacity;
    this.#log = log;
  }

  get pending(): number {
    return this.#rows.length;
  }

  add(row: RequestLogTuple): void {
    if (this.#rows.length >= this.#capacity) {
      this.#rows.dropFront(1);
      this.#droppedWhileShipping++;
      dropped.inc();
    }
    const text = JSON.stringify(row);
    this.#rows.push(text);
    // A full shipment goes at once, unless one is under way (it takes what is queued) or
    // reporting is down (the retry timer tries again): a request never queues behind the log.
    if (this.#full() && !this.#shipping && !this.#down) void this.flush().catch(() => {});
    else this.#schedule(FLUSH_MS);
  }

  #full(): boolean {
    return this.#rows.length >= this.#rowsAtMost || this.#rows.bytes >= SHIPMENT_BYTES;
  }

  #schedule(ms: number): void {
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.flush().catch(() => {});
    }, ms);
    this.#timer.unref();
  }

  /** Ships everything queued (one shipment at a time); throws when reporting does not take it, the rows kept. */
  async flush(): Promise<void> {
    while (this.#shipping) await this.#shipping.catch(() => {});
    if (this.#rows.length === 0) return;
    this.#shipping = this.#shipAll();
    try {
      await this.#shipping;
    } finally {
      this.#shipping = null;
    }
  }

  /**
   * Ships the rows queued when it starts, and any full shipment queued meanwhile. Rows that arrive
   * during a shipment wait for the timer: shipping them at once would make a busy process post a
   * small batch per round trip, and each insert costs the store far more than its rows.
   */
  async #shipAll(): Promise<void> {
    let due = this.#rows.length;
    while (this.#rows.length && (due > 0 || this.#full())) {
      const batch = this.#rows.hold(this.#rowsAtMost, SHIPMENT_BYTES);
      this.#droppedWhileShipping = 0;
      try {
        await this.#post(batch);
      } catch (error) {
        if (error instanceof ShipmentTooLarge && batch.rows > 1) {
          this.#rowsAtMost = Math.ceil(batch.rows / 2);
          continue;
        }
        if (!this.#down) this.#log.warn({ err: (error as Error).message, pending: this.#rows.length }, 'request log: reporting unavailable, rows kept until it is back');
        this.#down = true;
        this.#schedule(RETRY_MS);
        throw error;
      } finally {
        this.#rows.release();
      }
      // The batch was the front; rows dropped meanwhile left from the front, its own first.
      this.#rows.dropFront(Math.max(0, batch.rows - this.#droppedWhileShipping));
      due -= batch.rows;
      if (this.#down) this.#log.info('request log: reporting back, queued rows shipped');
      this.#down = false;
    }
    if (this.#rows.length) this.#schedule(FLUSH_MS);
  }

  async #post(batch: { rows: number; chunks: Buffer[] }): Promise<void> {
    const body = [SHIPMENT_HEAD, ...batch.chunks];
    const headers: Record<string, string | number> = { 'Content-Type': 'application/x-ndjson', 'Content-Length': body.reduce((sum, chunk) => sum + chunk.length, 0) };
    if (this.#secret) headers.Authorization = `Bearer ${this.#secret}`;
    const status = await new Promise<number>((resolve, reject) => {
      const request = (this.#url.protocol === 'https:' ? https : http).request(this.#url, { method: 'POST', headers, agent: this.#agent, timeout: 5000 }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      });
      request.on('timeout', () => request.destroy(new Error('reporting did not answer within 5 s')));
      request.on('error', reject);
      for (const chunk of body) request.write(chunk);
      request.end();
    });
    if (status === 413) throw new ShipmentTooLarge(`reporting refused ${batch.rows} rows as too large`);
    if (status < 200 || status >= 300) throw new Error(`reporting answered ${status}`);
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#agent.destroy();
  }
}

function errorTypeOf(ctx: Context): string | null {
  const body = ctx.body as { error_type?: unknown } | null | undefined;
  return ctx.status >= 400 && body && typeof body === 'object' && typeof body.error_type === 'string' ? body.error_type : null;
}

/**
 * The log names an idempotency key by a fingerprint, never the key itself: retries of one request
 * still share a value, and no reader of the log learns a key it could send.
 */
export function idempotencyKeyFingerprint(key: string): string {
  return `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
}

/** The row of an answered request: its values as they are, nothing formatted. */
export function requestLogRow(ctx: Context & { state: RequestState }, startedMs: number): RequestLogTuple {
  const { tenant, requestId, keyPrefix, version } = ctx.state;
  const elapsed = performance.now() - startedMs;
  const { 'idempotency-key': idempotencyKey, 'user-agent': userAgent } = ctx.req.headers;
  return [
    tenant?.orgId ?? '',
    tenant?.environment ?? '',
    requestId,
    ctx.method,
    routeOf(ctx),
    // A key pasted into a path (`/customers/<key>`) is kept as its shown prefix, as everywhere it is logged.
    (ctx.path.includes('_key_') ? maskCredentials(ctx.path) : ctx.path).slice(0, 512),
    ctx.status,
    Math.round(elapsed),
    keyPrefix ?? null,
    typeof idempotencyKey === 'string' && idempotencyKey !== '' ? idempotencyKeyFingerprint(idempotencyKey) : null,
    version ?? null,
    errorTypeOf(ctx),
    ctx.ip,
    typeof userAgent === 'string' ? userAgent.slice(0, 512) : '',
    storedLogTime(Date.now() - elapsed),
  ];
}

export function shouldLog(path: string): boolean {
  return !UNLOGGED.test(path);
}

/** `GET /request_logs`: this process's queue shipped first, then the reporting process answers. */
export function requestLogRoute(shipper: RequestLogShipper | null, config: Config) {
  return async function requestLogsRoute(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
    if (ctx.path !== '/request_logs') return next();
    if (ctx.method !== 'GET') throw badRequest('/request_logs is read-only', { method: `${ctx.method} is not allowed here` });
    if (!shipper || config.reportingUrl === null) throw badRequest('The request log is kept by the reporting process, which is off here (REPORTING_URL=off)');
    if (ctx.state.principal?.kind !== 'secret') throw badRequest('The request log is read with a secret key');
    // A malformed query is the caller's to fix, whether or not reporting is up.
    const params = [...new URLSearchParams(ctx.querystring)] as Array<[string, string]>;
    const query = parseListQuery(params, ctx.get('Accept'));
    if (query.format === 'parquet') throw badRequest('Parquet exports are answered for /transactions only', { format: 'parquet is for /transactions' });
    try {
      await shipper.flush();
    } catch {
      throw serviceUnavailable('Reporting is unavailable: the request log cannot be read now; requests are still logged and kept until it is back');
    }
    const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Request-Id': ctx.state.requestId };
    if (config.reportingSecret) headers.Authorization = `Bearer ${config.reportingSecret}`;
    const body = { tenant: ctx.state.tenant, version: ctx.state.version, params: params.filter(([key]) => key !== 'format') };
    let response: Response;
    try {
      response = await fetch(`${config.reportingUrl}/request_logs/query`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(config.reportingWaitMs + 1000) });
    } catch {
      throw serviceUnavailable('Reporting is unavailable: the request log cannot be read now; retry shortly');
    }
    const answer = await response.json().catch(() => null);
    if (response.status >= 500 || !answer) throw serviceUnavailable('Reporting is unavailable: the request log cannot be read now; retry shortly');
    if (response.status === 200 && query.format === 'csv') {
      const rows = answer as Record<string, unknown>;
      return isAggregateQuery(query) ? aggregateAsCsv(ctx, query, rows) : rowsAsCsv(ctx, requestLogs, query, rows);
    }
    ctx.status = response.status;
    ctx.body = answer;
  };
}
