/** Funding work in the worker: the daily run, instant funding and the sandbox card network's disputes. */
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/connection.ts';
import type { DomainServices } from '../../api/engine/family.ts';
import { chargeBack, reverseChargeback } from '../../api/families/funding/chargebacks.ts';
import { fundInstant, runFundingDayForAll } from '../../api/families/funding/run.ts';
import { timedRuns } from '../../api/metrics.ts';

/** The daily run at 00:10 UTC (once, whichever worker takes it). */
export const FUNDING_CRONTAB = '10 0 * * * funding_day ?jobKey=funding_day&jobKeyMode=preserve_run_at';

function transactionIdOf(payload: unknown): string {
  const id = (payload as { transaction_id?: unknown }).transaction_id;
  if (typeof id !== 'string') throw new Error('task needs a transaction_id');
  return id;
}

export function fundingDay(db: Db, domain: DomainServices, clock: () => Date): Task {
  return async () => {
    try {
      await runFundingDayForAll(db, domain, clock());
      timedRuns.inc({ task: 'funding_day', result: 'ok' });
    } catch (error) {
      timedRuns.inc({ task: 'funding_day', result: 'failed' });
      throw error;
    }
  };
}

export function fundInstantTask(db: Db, domain: DomainServices, clock: () => Date): Task {
  return async (payload) => {
    await fundInstant(db, domain, transactionIdOf(payload), clock());
  };
}

export function sandboxChargeback(db: Db, domain: DomainServices, clock: () => Date): Task {
  return async (payload) => {
    await chargeBack(db, domain, transactionIdOf(payload), clock());
  };
}

export function sandboxChargebackReversal(db: Db, domain: DomainServices): Task {
  return async (payload) => {
    await reverseChargeback(db, domain, transactionIdOf(payload));
  };
}
