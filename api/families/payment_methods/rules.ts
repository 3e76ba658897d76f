/** Payment method rules: number checks and sealing, the owning account, one default per account. */
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { applyClientAccount, spendClientTokenOnce } from '../clientIntent.ts';
import { updateNestedAll } from '../../engine/operations.ts';
import { paymentMethodFamily } from './declared.ts';
import { accountExists, lockOtherDefaults } from './repository.ts';
import { abaValid, cardBrand, expiryInPast, luhnValid, mask, normaliseExpiry } from './numbers.ts';
import { METHOD_STATUSES, methodStatus, VERIFICATION_STATUSES } from './statuses.ts';

function section(row: StoredObject, name: string): Json {
  const value = row.data[name];
  return isPlainObject(value) ? value : {};
}

function sealCard(ctx: RuleContext, card: Json): Json {
  const digits = String(card.card_number ?? '').replace(/[\s-]/g, '');
  // The sandbox decline numbers (4111 1111 1111 99NN) are accepted in the test environment as they are.
  const sandboxDecline = ctx.tenant.environment === 'test' && /^41111111111199\d\d$/.test(digits);
  if (!luhnValid(digits) && !sandboxDecline) throw invalidAttributes({ card: { card_number: 'Invalid card number' } });
  const expiry = normaliseExpiry(String(card.expiry ?? ''));
  if (!expiry) throw invalidAttributes({ card: { expiry: 'Must be MM/YY' } });
  if (expiryInPast(expiry.year, expiry.month, ctx.domain.now())) throw invalidAttributes({ card: { expiry: 'Card has expired' } });
  return {
    card_number: mask(digits),
    expiry: expiry.expiry,
    card_brand: cardBrand(digits),
    sealed_number: ctx.domain.vault.encrypt(digits),
    fingerprint: ctx.domain.vault.fingerprint(digits),
  };
}

function sealBankAccount(ctx: RuleContext, bank: Json): Json {
  const routing = String(bank.routing_number ?? '');
  const account = String(bank.account_number ?? '').replace(/[\s-]/g, '');
  const details: Json = {};
  if (!abaValid(routing)) details.routing_number = 'Invalid routing number';
  if (!/^\d{4,17}$/.test(account)) details.account_number = 'Must be 4 to 17 digits';
  if (Object.keys(details).length) throw invalidAttributes({ bank_account: details });
  return {
    account_number: mask(account),
    routing_number: routing,
    account_type: bank.account_type ?? 'checking',
    account_class: bank.account_class ?? null,
    currency: bank.currency ?? 'USD',
    sealed_number: ctx.domain.vault.encrypt(account),
    fingerprint: ctx.domain.vault.fingerprint(`${routing}:${account}`),
  };
}

/** The sandbox bank verifies an account at once, unless it will refuse debits from it. */
function bankVerification(ctx: RuleContext, bank: Json): string {
  const account = String(bank.account_number ?? '').replace(/[\s-]/g, '');
  return ctx.domain.processor.bankWillReject(account) ? VERIFICATION_STATUSES.failed : VERIFICATION_STATUSES.verified;
}

/** `status` follows `keep_active`, on create and on every update. */
function withStatus(row: StoredObject): StoredObject {
  const status = row.data.keep_active === false ? METHOD_STATUSES.inactive : METHOD_STATUSES.active;
  return row.data.status === status ? row : { ...row, data: { ...row.data, status } };
}

async function prepare(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  if (ctx.principal.kind === 'client' && !previous) {
    next = { ...next, data: { ...next.data } };
    applyClientAccount(ctx.principal.intent, next.data, ctx.version === 'v1' ? 'customer_id' : 'account_id');
  }
  const accountId = next.data.account_id;
  const known = typeof accountId === 'string' && ctx.knownAccounts?.has(accountId);
  if (typeof accountId === 'string' && accountId !== previous?.data.account_id && !known && !(await accountExists(ctx.tx, ctx.tenant, accountId))) {
    throw invalidAttributes({ [ctx.version === 'v1' ? 'customer_id' : 'account_id']: 'No account with this id' });
  }
  if (previous) {
    for (const [name, number] of [['card', 'card_number'], ['bank_account', 'account_number'], ['bank_account', 'routing_number'], ['card', 'expiry']]) {
      if (section(next, name)[number] !== section(previous, name)[number]) {
        throw invalidAttributes({ [name]: { [number]: 'Cannot be changed; create a new payment method' } });
      }
    }
    return withStatus(next);
  }
  await spendClientTokenOnce(ctx);
  const data = { ...next.data };
  if (next.type === 'card') data.card = sealCard(ctx, section(next, 'card'));
  else {
    data.verification_status = bankVerification(ctx, section(next, 'bank_account'));
    data.bank_account = sealBankAccount(ctx, section(next, 'bank_account'));
  }
  return withStatus({ ...next, data });
}

/**
 * Points a customer's `default_payment_method` at its paying default method (`methodId`; null:
 * at none, and then only where it pointed at `from`) through the account family's update. The
 * account family owns the pointer and registers this (api/families/index.ts), so this family
 * needs no import of it.
 */
export type PayingDefaultFollower = (ctx: RuleContext, accountId: string, methodId: string | null, from?: string) => Promise<void>;

let follower: PayingDefaultFollower | null = null;

export function registerPayingDefaultFollower(follow: PayingDefaultFollower): void {
  follower = follow;
}

function followPayingDefault(...args: Parameters<PayingDefaultFollower>): Promise<void> {
  if (!follower) throw new Error('The account family registers its paying default follower: import api/families/index.ts first');
  return follower(...args);
}

const coversPayments = (paying: unknown) => paying === 'payments' || paying === 'all';

/**
 * The account's other methods that were its `kind` default (locked by the caller) are no longer,
 * each a change through the family's update (audited, with the request's actor) in the transaction
 * that marks the new one.
 */
async function dropDefault(ctx: RuleContext, others: StoredObject[], kind: 'paying' | 'funding'): Promise<void> {
  await updateNestedAll(ctx, paymentMethodFamily(), others, new Map([[`account_defaults.${kind}`, undefined]]));
}

/**
 * A method that becomes an account's paying (or funding) default takes it from the others. The
 * others are locked before the customer is: a change or delete of one of them locks it, then
 * follows to the customer, so this order is the same and two such requests queue, never deadlock.
 * The customer's pointer then follows, before the others change, so a previous default's own
 * change finds it moved on and leaves it (the pointer changes once).
 */
async function afterWrite(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  const accountId = next.data.account_id;
  if (typeof accountId !== 'string') return;
  const paying = section(next, 'account_defaults').paying;
  const wasPaying = previous ? section(previous, 'account_defaults').paying : undefined;
  if (paying !== wasPaying) {
    if (coversPayments(paying)) {
      const others = await lockOtherDefaults(ctx.tx, ctx.tenant, accountId, 'paying', next.id);
      await followPayingDefault(ctx, accountId, next.id);
      await dropDefault(ctx, others, 'paying');
    } else if (coversPayments(wasPaying)) {
      await followPayingDefault(ctx, accountId, null, next.id);
    }
  }
  const funding = section(next, 'account_defaults').funding;
  if (funding && (!previous || section(previous, 'account_defaults').funding !== funding)) {
    await dropDefault(ctx, await lockOtherDefaults(ctx.tx, ctx.tenant, accountId, 'funding', next.id), 'funding');
  }
}

/**
 * Methods stored before `status` and `verification_status` existed show them too: kept unless
 * `keep_active` said otherwise, and a bank account no one verified `not-verified`.
 */
async function load(_ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  for (const [i, row] of rows.entries()) {
    const unverified = row.type === 'bank_account' && row.data.verification_status === undefined;
    if (row.data.status !== undefined && !unverified) continue;
    const data = { ...row.data, status: methodStatus(row.data) };
    rows[i].data = unverified ? { ...data, verification_status: VERIFICATION_STATUSES.notVerified } : data;
  }
}

/** A customer whose default was a deleted method has none now. */
async function beforeDelete(ctx: RuleContext, deleted: StoredObject[]): Promise<void> {
  for (const method of deleted) {
    if (typeof method.data.account_id === 'string') await followPayingDefault(ctx, method.data.account_id, null, method.id);
  }
}

/**
 * A method's change is written on its own unless it moves the method to another account (whose
 * existence prepare reads) or changes its account defaults (afterWrite takes them from the other
 * methods and points the customer at it). A security code given with it is dropped by the door.
 */
function plainChange(next: StoredObject, previous: StoredObject): boolean {
  return next.data.account_id === previous.data.account_id
    && JSON.stringify(section(next, 'account_defaults')) === JSON.stringify(section(previous, 'account_defaults'));
}

export const paymentMethodRules: FamilyRules = { prepare, afterWrite, load, beforeDelete, plainChange };
