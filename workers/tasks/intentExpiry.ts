/** Expires intents and payment activations still pending at their `expires_at` (api/families/intents/expiry.ts). */
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/connection.ts';
import type { DomainServices } from '../../api/engine/family.ts';
import { expireLink, type ExpiryJob } from '../../api/families/intents/expiry.ts';

function jobOf(payload: unknown): ExpiryJob {
  const job = payload as Partial<ExpiryJob>;
  const tableOk = job.table === 'intents' || job.table === 'payment_activations';
  if (!tableOk || typeof job.id !== 'string' || typeof job.org_id !== 'string' || (job.environment !== 'test' && job.environment !== 'live')) {
    throw new Error('expire_intent needs table, id, org_id and environment');
  }
  return job as ExpiryJob;
}

export function expireIntent(db: Db, domain: DomainServices, clock: () => Date): Task {
  return async (payload) => {
    await expireLink(db, domain, jobOf(payload), clock());
  };
}
