/**
 * Funding runs (CONTRACT §14): for each processing account, the paying transactions due by the
 * run's date are cleared and, by the account's style, deposited to its funding method.
 *
 *   netted   one deposit of the available balance (a withdrawal when negative)
 *   gross    one deposit of the due transactions' amounts before fees; on the 1st of the month,
 *            one withdrawal of the fees (and anything else) left owing
 *   itemized one deposit (or withdrawal) per due transaction
 *   manual   cleared into `available` and held there until a deposit request releases it
 *
 * Without a funding method, cleared money waits in `held` until one exists. Each account's run
 * is one database transaction under the account's row lock; the due rows are claimed (locked,
 * skipping any a request holds) and their `funding_status` changed through the transaction
 * family's update, each audited, so two workers running the same day, or a run retried after a
 * crash, fund each transaction exactly once.
 */
import type { Db } from '../../db/connection.ts';
import type { DomainServices, RuleContext, StoredObject, Tenant } from '../../engine/family.ts';
import { newId } from '../../ids.ts';
import { createSystemTransaction } from '../transactions/systemMade.ts';
import { fundingLegs, grossOf, netOf } from './amounts.ts';
import { bucketTotal, postLegs, postingExists } from './ledger.ts';
import { claimDueForFunding, recordFundingSteps, type FundingItem, type FundingStep } from '../transactions/funding.ts';
import * as repo from './repository.ts';

export interface FundingOutcome {
  cleared: number;
  funded: number;
  deposits: string[];
}

const NONE: FundingOutcome = { cleared: 0, funded: 0, deposits: [] };

export function isoDate(at: Date): string {
  return at.toISOString().slice(0, 10);
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** The funding run acting on a tenant's processing accounts. */
function runContext(tx: Db, domain: DomainServices, tenant: Tenant): RuleContext {
  return { tx, tenant, version: 'v1', domain, principal: { kind: 'secret', keyId: 'funding_run', settings: {} } };
}

/**
 * A deposit (positive) or withdrawal (negative) to the funding method, through the one create
 * service (its row, transfer rows listing what it funds, and event), then its ledger posting
 * (keyed `fund:<id>` unless a key is given).
 */
async function moveFunds(ctx: RuleContext, accountId: string, method: StoredObject | null, amount: number, items: Array<{ id: string; net: number }>, description: string, posting?: string): Promise<string> {
  const kind = amount >= 0 ? 'deposit' : 'withdraw';
  const row = await createSystemTransaction(ctx, {
    type: kind, madeBy: 'funding_run', amount: Math.abs(amount), customerId: null, processingId: accountId,
    method: method && { id: method.id, type: method.type },
    methodFacts: { payment_method: method && { object: 'payment_method', id: method.id, type: method.type }, payment_method_type: method?.type ?? null, card_brand: null },
    statusCode: 'approved', statusMessage: 'Approved', description,
    entries: items.map((item) => ({ entry_type: kind, account_id: accountId, assoc_transaction_id: item.id, amount: item.net })),
  });
  await postLegs(ctx.tx, ctx.tenant, row.id, posting ?? `fund:${row.id}`, fundingLegs(accountId, amount));
  return row.id;
}

function stepsOf(item: FundingItem): Array<'clear' | 'fund'> {
  return item.was === 'pending' ? ['clear', 'fund'] : ['fund'];
}

export interface FundOptions {
  /** fund just these transactions at once, itemized (funding_timing instant) */
  only?: string[];
}

/** One account's run for the date of `asOf`. */
export async function fundAccount(db: Db, domain: DomainServices, tenant: Tenant, accountId: string, asOf: Date, options: FundOptions = {}): Promise<FundingOutcome> {
  return db.transaction(async (tx) => {
    const ctx = runContext(tx, domain, tenant);
    const account = await repo.lockProcessingAccount(tx, tenant, accountId);
    if (!account) return NONE;
    const funding = ((account.data.processing as Record<string, unknown> | undefined)?.funding ?? {}) as Record<string, unknown>;
    const configured = typeof funding.style === 'string' ? funding.style : 'netted';
    if (options.only && configured === 'manual') return NONE;
    const style = options.only ? 'itemized' : configured;
    const method = style === 'manual' ? null : await repo.fundingMethod(tx, tenant, accountId);
    if (options.only && !method) return NONE;
    const funds = method !== null;
    const items = await claimDueForFunding(ctx, { accountId, dueBy: isoDate(asOf), to: funds ? 'funded' : 'held', includeHeld: funds, only: options.only });
    const cleared = items.filter((item) => item.was === 'pending');
    const clearedNet = sum(cleared.map(netOf));
    const run = newId('run');
    await postLegs(tx, tenant, null, `clear:${run}`, [
      { accountId, bucket: 'pending', amount: -clearedNet },
      { accountId, bucket: style === 'manual' || funds ? 'available' : 'held', amount: clearedNet },
    ]);
    if (!funds) {
      await recordFundingSteps(tx, tenant, cleared.map((item) => ({ ...item, steps: ['clear'] })));
      return { cleared: cleared.length, funded: 0, deposits: [] };
    }

    const held = await bucketTotal(tx, tenant, accountId, 'held');
    await postLegs(tx, tenant, null, `release:${run}`, [{ accountId, bucket: 'held', amount: -held }, { accountId, bucket: 'available', amount: held }]);
    const description = `Funding of ${isoDate(asOf)}`;
    const funded: FundingStep[] = [];
    const deposits: string[] = [];
    if (style === 'itemized') {
      for (const item of items) {
        const net = netOf(item);
        const depositId = net === 0 ? undefined : await moveFunds(ctx, accountId, method, net, [{ id: item.id, net }], description);
        if (depositId) deposits.push(depositId);
        funded.push({ id: item.id, amount: item.amount, depositId, steps: stepsOf(item) });
      }
      // What no item explains (a bank rejection after payout) is settled on its own; instant
      // funding of one transaction leaves the account's other money to its own style.
      const rest = options.only ? 0 : await bucketTotal(tx, tenant, accountId, 'available');
      if (rest !== 0) deposits.push(await moveFunds(ctx, accountId, method, rest, [], `Adjustment of ${isoDate(asOf)}`));
    } else {
      const listed = items.map((item) => ({ id: item.id, net: style === 'gross' ? grossOf(item.type, item.amount) : netOf(item) }));
      const amount = style === 'gross' ? sum(listed.map((l) => l.net)) : await bucketTotal(tx, tenant, accountId, 'available');
      const depositId = amount === 0 ? undefined : await moveFunds(ctx, accountId, method, amount, listed, description);
      if (depositId) deposits.push(depositId);
      for (const item of items) funded.push({ id: item.id, amount: item.amount, depositId, steps: stepsOf(item) });
    }
    // One statement for every item's operations: `clear` (when cleared by this run) and `fund`.
    await recordFundingSteps(tx, tenant, funded);
    return { cleared: cleared.length, funded: funded.length, deposits };
  });
}

/**
 * Gross style, on the 1st of the month (once): the fees the month's gross deposits left owing are
 * withdrawn, with anything else left in the available balance (a rejection after payout) — one
 * withdrawal (or deposit) of the available balance, before that day's deposits.
 */
export async function settleGrossMonth(db: Db, domain: DomainServices, tenant: Tenant, accountId: string, asOf: Date): Promise<string | null> {
  if (asOf.getUTCDate() !== 1) return null;
  const month = isoDate(new Date(Date.UTC(asOf.getUTCFullYear(), asOf.getUTCMonth() - 1, 1))).slice(0, 7);
  const posting = `fees:${accountId}:${month}`;
  return db.transaction(async (tx) => {
    const account = await repo.lockProcessingAccount(tx, tenant, accountId);
    if (!account || (await postingExists(tx, posting))) return null;
    const method = await repo.fundingMethod(tx, tenant, accountId);
    const owed = -(await bucketTotal(tx, tenant, accountId, 'available'));
    if (owed === 0 || !method) return null;
    return moveFunds(runContext(tx, domain, tenant), accountId, method, -owed, [], `Fees of ${month}`, posting);
  });
}

export interface FundingDayResult {
  accounts: number;
  cleared: number;
  funded: number;
  deposits: string[];
}

const ACCOUNTS_AT_ONCE = 3;

async function runFor(db: Db, domain: DomainServices, asOf: Date, tenant?: Tenant): Promise<FundingDayResult> {
  const result: FundingDayResult = { accounts: 0, cleared: 0, funded: 0, deposits: [] };
  const tenantOf = (row: { org_id: string; environment: 'test' | 'live' }): Tenant => ({ orgId: row.org_id, environment: row.environment });
  if (asOf.getUTCDate() === 1) {
    for (const gross of await repo.grossAccounts(db, tenant)) {
      const id = await settleGrossMonth(db, domain, tenantOf(gross), gross.account_id, asOf);
      if (id) result.deposits.push(id);
    }
  }
  const queue = await repo.accountsWithDueItems(db, isoDate(asOf), tenant);
  // Accounts are independent (each run holds its own account's lock): a few at once keep both the
  // database and this process busy.
  const fundNext = async (): Promise<void> => {
    for (let due = queue.shift(); due; due = queue.shift()) {
      const outcome = await fundAccount(db, domain, tenantOf(due), due.account_id, asOf);
      result.accounts += 1;
      result.cleared += outcome.cleared;
      result.funded += outcome.funded;
      result.deposits.push(...outcome.deposits);
    }
  };
  // Every account's run ends (each is its own transaction) before a failure is reported.
  const ended = await Promise.allSettled(Array.from({ length: ACCOUNTS_AT_ONCE }, fundNext));
  const failed = ended.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return result;
}

/** A tenant's funding day (the test clock's step). */
export function runFundingDay(db: Db, domain: DomainServices, tenant: Tenant, asOf: Date): Promise<FundingDayResult> {
  return runFor(db, domain, asOf, tenant);
}

/** Every tenant's funding day (the worker's daily run). */
export function runFundingDayForAll(db: Db, domain: DomainServices, asOf: Date): Promise<FundingDayResult> {
  return runFor(db, domain, asOf);
}

/** `funding_timing: instant`: the transaction is funded as soon as it is processed, by its own deposit. */
export async function fundInstant(db: Db, domain: DomainServices, transactionId: string, now: Date): Promise<FundingOutcome> {
  const found = await repo.transactionAccount(db, transactionId);
  if (!found?.account_id) return NONE;
  return fundAccount(db, domain, { orgId: found.org_id, environment: found.environment }, found.account_id, now, { only: [transactionId] });
}
