/**
 * `settle reporting rebuild`: a fresh copy of every transaction into ClickHouse, built beside the
 * live table and swapped in, then the mirror follows from the snapshot it was taken at.
 *
 * The running reporting leader does it when one answers at REPORTING_URL (it owns the store; an
 * embedded chdb directory cannot be opened twice). Otherwise this process does it itself, holding
 * the leader lock for the duration, so no mirror writes meanwhile.
 */
import type { Config } from '../api/config.ts';
import { createDb } from '../api/db/connection.ts';
import { createLogger } from '../api/logger.ts';
import { LeaderLock } from './leader.ts';
import { Mirror, type RebuildProgress } from './mirror.ts';
import { openStore, storeTarget, UnsupportedClickHouse } from './store.ts';

export class RebuildRefused extends Error {}

/** A progress line on stderr: a bar redrawn in place on a terminal, a line every few seconds otherwise. */
export function progressPrinter(out: NodeJS.WriteStream = process.stderr): { update: (p: RebuildProgress) => void; done: (p: RebuildProgress) => void } {
  const started = Date.now();
  let lastLine = 0;
  const render = (p: RebuildProgress) => {
    const fraction = p.total > 0 ? Math.min(1, p.done / p.total) : 0;
    const width = 30;
    const filled = Math.round(fraction * width);
    const seconds = Math.max(0.001, (Date.now() - started) / 1000);
    const rate = Math.round(p.done / seconds);
    return `rebuild [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}% ${p.done.toLocaleString('en')}/${p.total.toLocaleString('en')} rows, ${rate.toLocaleString('en')} rows/s`;
  };
  return {
    update: (p) => {
      if (out.isTTY) return void out.write(`\r${render(p)}`);
      if (Date.now() - lastLine < 2000) return;
      lastLine = Date.now();
      out.write(`${render(p)}\n`);
    },
    done: (p) => out.write(`${out.isTTY ? '\r' : ''}${render(p)}\n`),
  };
}

/** Asks the running reporting process; null when none listens there. */
export async function rebuildThroughProcess(config: Config, onProgress: (p: RebuildProgress) => void): Promise<RebuildProgress | null> {
  const headers: Record<string, string> = config.reportingSecret ? { Authorization: `Bearer ${config.reportingSecret}` } : {};
  let response: Response;
  try {
    response = await fetch(`${config.reportingUrl}/rebuild`, { method: 'POST', headers });
  } catch {
    return null;
  }
  if (!response.ok || !response.body) {
    const body = await response.json().catch(() => ({})) as { error_description?: string };
    throw new RebuildRefused(`${config.reportingUrl}: ${body.error_description ?? `HTTP ${response.status}`}`);
  }
  let buffered = '';
  let last: RebuildProgress = { done: 0, total: 0 };
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffered.slice(0, newline)) as RebuildProgress & { finished?: boolean; error?: string };
      buffered = buffered.slice(newline + 1);
      if (line.error) throw new RebuildRefused(line.error);
      last = { done: line.done, total: line.total };
      if (!line.finished) onProgress(last);
    }
  }
  return last;
}

/** Rebuilds from this process, as the mirror leader. */
export async function rebuildInProcess(config: Config, onProgress: (p: RebuildProgress) => void): Promise<RebuildProgress> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
  const target = storeTarget(config);
  const lock = new LeaderLock(config.databaseUrl, target.identity);
  const acquired = await lock.tryAcquire({ onNotify: () => {}, onLost: () => {} });
  if (!acquired) throw new RebuildRefused('another reporting process holds the mirror lock; run the rebuild through it (REPORTING_URL)');
  const db = createDb(config.databaseUrl, 2);
  const store = openStore(config);
  try {
    await store.checkVersion(target.shown).catch((error: unknown) => {
      throw error instanceof UnsupportedClickHouse ? new RebuildRefused(error.message) : error;
    });
    const mirror = new Mirror(db, store, createLogger('warn', 'reporting'), { pollIntervalMs: config.reportingPollIntervalMs, batchIntervalMs: config.reportingBatchIntervalMs });
    await mirror.open();
    return await mirror.rebuild(onProgress);
  } finally {
    await store.close();
    await db.destroy();
    await lock.release();
  }
}
