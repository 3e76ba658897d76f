/**
 * Host name lookups for outgoing requests that fail fast. The system lookup (getaddrinfo, on
 * libuv's thread pool) cannot be cancelled: a name whose resolver does not answer holds a pool
 * thread for as long as the resolver's own retries last. So a caller waits at most the timeout;
 * a name that failed or timed out fails at once for a short while; concurrent lookups of one name
 * share one system lookup; and each tenant may have only so many system lookups unanswered
 * (including those its requests gave up on), so one tenant's bad names cannot take the pool.
 */
import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';

/** How long a name that failed or timed out fails at once, without a new system lookup. */
const FAILURE_TTL_MS = 10_000;
/** Remembered failures beyond this are swept of expired ones. */
const FAILURES_SWEPT_AT = 10_000;

type Callback = (error: NodeJS.ErrnoException | null, ...answer: unknown[]) => void;
type SystemLookup = (hostname: string, options: dns.LookupOptions, callback: Callback) => void;

export interface DnsLookupOptions {
  /** how long a request waits for a name (WEBHOOK_DNS_TIMEOUT) */
  timeoutMs: number;
  /** system lookups one tenant may have unanswered at once; 0: no limit */
  pendingPerTenant: number;
  /** the system lookup; default dns.lookup, looked up at each call */
  lookup?: SystemLookup;
  now?: () => number;
}

export interface DnsLookups {
  /** The lookup function for requests made on behalf of `tenant` (got's `dnsLookup`). */
  forTenant(tenant: string): LookupFunction;
}

interface Pending {
  tenant: string;
  waiters: Set<Callback>;
}

function dnsError(code: string, hostname: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code, hostname, syscall: 'lookup' });
}

export function createDnsLookups(options: DnsLookupOptions): DnsLookups {
  const system: SystemLookup = options.lookup ?? ((hostname, lookupOptions, callback) => dns.lookup(hostname, lookupOptions as dns.LookupAllOptions, callback as never));
  const now = options.now ?? Date.now;
  const failures = new Map<string, { error: NodeJS.ErrnoException; until: number }>();
  const pending = new Map<string, Pending>();
  const unanswered = new Map<string, number>();

  const fail = (key: string, error: NodeJS.ErrnoException) => {
    if (failures.size >= FAILURES_SWEPT_AT) for (const [name, failure] of failures) if (failure.until <= now()) failures.delete(name);
    failures.set(key, { error, until: now() + FAILURE_TTL_MS });
  };

  const start = (key: string, tenant: string, hostname: string, lookupOptions: dns.LookupOptions): Pending => {
    const entry: Pending = { tenant, waiters: new Set() };
    pending.set(key, entry);
    unanswered.set(tenant, (unanswered.get(tenant) ?? 0) + 1);
    system(hostname, lookupOptions, (error, ...answer) => {
      pending.delete(key);
      const left = (unanswered.get(tenant) ?? 1) - 1;
      if (left > 0) unanswered.set(tenant, left);
      else unanswered.delete(tenant);
      if (error) fail(key, error);
      else failures.delete(key);
      for (const waiter of entry.waiters) waiter(error, ...answer);
    });
    return entry;
  };

  const lookup = (tenant: string, hostname: string, lookupOptions: dns.LookupOptions, callback: Callback) => {
    if (net.isIP(hostname)) return system(hostname, lookupOptions, callback);
    const key = `${hostname}|${lookupOptions.family ?? 0}|${lookupOptions.all ? 'all' : 'one'}`;
    const failed = failures.get(key);
    if (failed && failed.until > now()) return process.nextTick(callback, failed.error);
    let entry = pending.get(key);
    if (!entry) {
      const held = unanswered.get(tenant) ?? 0;
      if (options.pendingPerTenant > 0 && held >= options.pendingPerTenant) {
        return process.nextTick(callback, dnsError('EAI_AGAIN', hostname, `DNS lookup of ${hostname} not started: ${held} earlier lookups of this account are still unanswered`));
      }
      entry = start(key, tenant, hostname, lookupOptions);
    }
    const waiters = entry.waiters;
    const timer = setTimeout(() => {
      waiters.delete(waiter);
      const error = dnsError('ETIMEOUT', hostname, `DNS lookup of ${hostname} timed out after ${options.timeoutMs} ms`);
      fail(key, error);
      callback(error);
    }, options.timeoutMs);
    const waiter: Callback = (error, ...answer) => {
      clearTimeout(timer);
      callback(error, ...answer);
    };
    waiters.add(waiter);
  };

  return {
    forTenant: (tenant) => ((hostname: string, lookupOptions: dns.LookupOptions | number | Callback, callback?: Callback) => {
      if (typeof lookupOptions === 'function') return lookup(tenant, hostname, {}, lookupOptions);
      if (typeof lookupOptions === 'number') return lookup(tenant, hostname, { family: lookupOptions }, callback!);
      return lookup(tenant, hostname, lookupOptions ?? {}, callback!);
    }) as LookupFunction,
  };
}
