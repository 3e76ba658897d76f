/** The daily billing run (00:05 UTC, once, whichever worker takes it): invoicing, then automatic payments. */
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/connection.ts';
import type { DomainServices } from '../../api/engine/family.ts';
import { runBillingDayForAll, type AroundTenant } from '../../api/families/billing_schedules/run.ts';
import { timedRuns } from '../../api/metrics.ts';

export const BILLING_CRONTAB = '5 0 * * * billing_day ?jobKey=billing_day&jobKeyMode=preserve_run_at';

/**
 * `domain`: the worker's services, whose clock says which day it is and whose processor decides the
 * automatic payments' cards; `around`: each tenant's part under its gate.
 */
export function billingDay(db: Db, domain: DomainServices, around?: AroundTenant): Task {
  return async () => {
    try {
      await runBillingDayForAll(db, domain, domain.now(), around);
      timedRuns.inc({ task: 'billing_day', result: 'ok' });
    } catch (error) {
      timedRuns.inc({ task: 'billing_day', result: 'failed' });
      throw error;
    }
  };
}
