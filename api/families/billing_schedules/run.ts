/**
 * A billing day: the invoicing run, then automatic payments, for one tenant or for all. The worker
 * runs it daily (00:05 UTC) and the test clock runs it when it moves (CONTRACT §15).
 */
import type { Db } from '../../db/connection.ts';
import type { DomainServices, Tenant } from '../../engine/family.ts';
import { collectAutomaticPayments } from './autopay.ts';
import { produceInvoices } from './invoicing.ts';
import { billingTenants } from './repository.ts';

export interface BillingDayResult {
  invoices: string[];
  payments: string[];
}

export async function runBillingDay(db: Db, domain: DomainServices, tenant: Tenant, asOf: Date): Promise<BillingDayResult> {
  const invoices = await produceInvoices(db, tenant, asOf);
  const payments = await collectAutomaticPayments(db, domain, tenant, asOf);
  return { invoices, payments };
}

export async function runBillingDayForAll(db: Db, domain: DomainServices, asOf: Date): Promise<BillingDayResult> {
  const total: BillingDayResult = { invoices: [], payments: [] };
  for (const tenant of await billingTenants(db)) {
    const result = await runBillingDay(db, domain, tenant, asOf);
    total.invoices.push(...result.invoices);
    total.payments.push(...result.payments);
  }
  return total;
}
