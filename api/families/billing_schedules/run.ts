/**
 * A billing day: the invoicing run, then automatic payments, for one tenant or for all. The worker
 * runs it daily (00:05 UTC) and the test clock runs it when it moves (CONTRACT §15).
 */
import { runAudited } from '../../db/auditContext.ts';
import type { Db } from '../../db/connection.ts';
import type { DomainServices, Tenant } from '../../engine/family.ts';
import { collectAutomaticPayments } from './autopay.ts';
import { produceInvoices } from './invoicing.ts';
import { billingTenants } from './repository.ts';

export interface BillingDayResult {
  invoices: string[];
  payments: string[];
}

/** The billing run acts on its own, as the system, whoever moved the clock. */
const BILLING_RUN = { actor: { type: 'system' as const, name: 'billing_run' } };

export function runBillingDay(db: Db, domain: DomainServices, tenant: Tenant, asOf: Date): Promise<BillingDayResult> {
  return runAudited(BILLING_RUN, async () => {
    const invoices = await produceInvoices(db, domain, tenant, asOf);
    const payments = await collectAutomaticPayments(db, domain, tenant, asOf);
    return { invoices, payments };
  });
}

/** Runs one tenant's part of the day (the worker's: under the tenant's gate, so no reset of it overlaps). */
export type AroundTenant = <T>(tenant: Tenant, work: () => Promise<T>) => Promise<T>;

export async function runBillingDayForAll(db: Db, domain: DomainServices, asOf: Date, around: AroundTenant = (_tenant, work) => work()): Promise<BillingDayResult> {
  const total: BillingDayResult = { invoices: [], payments: [] };
  for (const tenant of await billingTenants(db)) {
    // Autopay reads a tenant's invoices, then pays them in transactions of its own.
    const result = await around(tenant, () => runBillingDay(db, domain, tenant, asOf));
    total.invoices.push(...result.invoices);
    total.payments.push(...result.payments);
  }
  return total;
}
