/**
 * A database machine that vanishes (powered off, cut off by the network) sends no reset: a
 * connection waiting on it waits for the kernel's retransmissions to give up, about a quarter of
 * an hour, and an idle one is never told. Every connection api/db/primary.ts opens notices such a
 * host within a bound (SETTLE_DATABASE_SILENCE):
 * - connecting must finish within it;
 * - TCP keepalive probes an idle connection (a held lock, a LISTEN) once it has been quiet that
 *   long, five times a fifth of it apart: a host that answers none is gone;
 * - a query that has waited the bound with nothing received is not failed for that alone (a long
 *   report or export legitimately says nothing for minutes): a fresh connection to the same host
 *   is tried, bounded likewise, and only when the server does not answer that either is the
 *   waiting connection destroyed.
 * The error is ETIMEDOUT, a connection-level error: a request answers 503 with Retry-After, the
 * pool discards the connection, and a multi-host URL's primary is looked for again.
 */
import type net from 'node:net';
import pg from 'pg';

let silenceMs = 10_000;

/** The bound for every connection opened from now on in this process (SETTLE_DATABASE_SILENCE). */
export function setDatabaseSilence(ms: number): void {
  silenceMs = ms;
}

function silenceError(host: string): Error {
  return Object.assign(new Error(`The database host ${host} sent nothing for ${silenceMs} ms`), { code: 'ETIMEDOUT' });
}

/** What pg keeps private and this module reads: the socket and the query awaiting its answer. */
interface ClientInternals {
  connection: { stream: net.Socket };
  _getActiveQuery(): unknown;
}

function internals(client: pg.Client): ClientInternals {
  return client as unknown as ClientInternals;
}

/**
 * Runs `connect` (the client's own connect) within the bound, then keeps the connection under
 * watch until it ends. `host` names the server for the error; `hostUrl` is how to reach it again.
 */
export async function connectWatched(client: pg.Client, hostUrl: string, host: string, connect: () => Promise<unknown>): Promise<void> {
  const bound = silenceMs;
  const stream = internals(client).connection.stream;
  const timer = setTimeout(() => stream.destroy(silenceError(host)), bound);
  try {
    await connect();
  } finally {
    clearTimeout(timer);
  }
  // The socket may have been replaced by a TLS one during the handshake.
  const socket = internals(client).connection.stream;
  const probeEvery = Math.max(1000, Math.round(bound / 5));
  socket.setKeepAlive({ enable: true, initialDelay: Math.max(1000, bound), interval: probeEvery, count: 5 });
  watchQueries(client, socket, hostUrl, host, bound);
}

/** Checks twice per bound whether the query in flight has received anything since the last look. */
function watchQueries(client: pg.Client, socket: net.Socket, hostUrl: string, host: string, bound: number): void {
  let seen = { query: null as unknown, read: socket.bytesRead, since: performance.now() };
  let probing = false;
  const check = () => {
    const query = internals(client)._getActiveQuery();
    const read = socket.bytesRead;
    if (!query || query !== seen.query || read !== seen.read) {
      seen = { query, read, since: performance.now() };
      return;
    }
    if (probing || performance.now() - seen.since < bound) return;
    probing = true;
    void hostAnswers(hostUrl, bound).then((answers) => {
      probing = false;
      const unchanged = internals(client)._getActiveQuery() === query && socket.bytesRead === read;
      if (!answers && unchanged) socket.destroy(silenceError(host));
      else seen.since = performance.now();
    });
  };
  const timer = setInterval(check, Math.max(100, Math.round(bound / 2))).unref();
  const stop = () => clearInterval(timer);
  client.once('end', stop);
  socket.once('close', stop);
}

/** One probe per host at a time, shared by every connection waiting on it. */
const probes = new Map<string, Promise<boolean>>();

function hostAnswers(hostUrl: string, bound: number): Promise<boolean> {
  let probe = probes.get(hostUrl);
  if (!probe) {
    probe = probeHost(hostUrl, bound).finally(() => probes.delete(hostUrl));
    probes.set(hostUrl, probe);
  }
  return probe;
}

/** Whether the server at `hostUrl` answers a new connection within the bound (refusing it with an error of its own counts). */
async function probeHost(hostUrl: string, bound: number): Promise<boolean> {
  const client = new pg.Client({ connectionString: hostUrl, application_name: 'settle-silence-probe' });
  client.on('error', () => {});
  const stream = internals(client).connection.stream;
  const timer = setTimeout(() => stream.destroy(), bound);
  try {
    await client.connect();
    return true;
  } catch (error) {
    return error instanceof pg.DatabaseError;
  } finally {
    clearTimeout(timer);
    // Not awaited: a client whose socket was destroyed may never report its end.
    client.end().catch(() => {});
  }
}
