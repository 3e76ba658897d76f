/**
 * Completing an enrollment link (CONTRACT §13), the domain step behind the hosted `/enroll/<id>`
 * page (§16): a payouts enrollment link or payment activation becomes a customer account (v1
 * customer) whose bank account is its payout method (`account_defaults.funding = all`); an
 * account enrollment link becomes a processing account with its entity (which starts
 * verification). Either way `account_id` is set and the link finishes with its status event, all
 * in the caller's transaction. Each object is made through its family's own pipeline.
 *
 * A processing_account_plugin client token (Payload.ProcessingAccount's hosted frame) opens a
 * processing account the same way: its one use is spent, which finishes its intent.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { createNested, updateNested } from '../../engine/operations.ts';
import { conflict, invalidAttributes, notFound } from '../../errors.ts';
import { accounts } from '../accounts/family.ts';
import { paymentMethods } from '../payment_methods/family.ts';
import { intents } from './family.ts';
import { finishLink } from '../linkEnd.ts';
import { findIntentIdByTokenHash, lockLink, type LinkTable } from './repository.ts';
import { spendClientToken } from './tokenSpend.ts';
import { LINK_OBJECTS } from './triggers.ts';

export type EnrollmentTarget = { table: LinkTable; id: string };

export interface BankAccountInput {
  account_number: string;
  routing_number: string;
  account_type?: 'checking' | 'savings';
}

export interface PayoutEnrollment {
  name: string;
  email?: string;
  bank_account: BankAccountInput;
}

export interface AccountEnrollment {
  name: string;
  /** a v2 entity body (`{type, legal_name, tax_id{value}, address{…}, business{…}}`) */
  entity: Record<string, unknown>;
  /** the processing account's funding method, when collected */
  bank_account?: BankAccountInput;
}

/** The link locked for this change: it must be pending and not past its time. */
async function lockPendingLink(ctx: RuleContext, target: EnrollmentTarget): Promise<StoredObject> {
  const link = await lockLink(ctx.tx, target.table, ctx.tenant, target.id);
  if (!link) throw notFound(`No ${LINK_OBJECTS[target.table].name} with id ${target.id}`);
  if (link.data.status !== 'pending' || Date.parse(String(link.data.expires_at)) <= ctx.domain.now().getTime()) {
    throw conflict(`This link is ${link.data.status === 'pending' ? 'expired' : link.data.status}`);
  }
  return link;
}

/** The enrollment acts for the link's owner, in the v2 shapes, whoever opened the page. */
function asService(ctx: RuleContext, target: EnrollmentTarget): RuleContext {
  return { ...ctx, version: 'v2', principal: { kind: 'secret', keyId: `enrollment:${target.id}`, settings: {} } };
}

function bankMethod(input: BankAccountInput, holder: string): Record<string, unknown> {
  return { type: 'bank_account', account_holder: holder, bank_account: { account_type: 'checking', ...input } };
}

/** A payouts enrollment link or payment activation: a customer with its payout bank account. */
export async function completePayoutEnrollment(ctx: RuleContext, target: EnrollmentTarget, input: PayoutEnrollment): Promise<string> {
  const link = await lockPendingLink(ctx, target);
  if (target.table === 'intents' && link.type !== 'payouts_enrollment_link') throw invalidAttributes({ type: 'Not a payouts enrollment link' });
  const service = asService(ctx, target);
  const customer = await createNested(service, accounts, { type: 'customer', name: input.name, contact_details: { email: input.email ?? null } });
  await createNested(service, paymentMethods, { ...bankMethod(input.bank_account, input.name), account_id: customer.id },
    new Map([['account_defaults.funding', 'all']]));
  await finishLink(ctx, target.table, link, customer.id);
  return customer.id;
}

/** A processing account with its entity (which starts verification) and, when given, its funding method. */
async function openProcessingAccount(service: RuleContext, template: Record<string, unknown>, input: AccountEnrollment): Promise<string> {
  const body: Record<string, unknown> = { type: 'processing', name: input.name, entity: { ...template, ...input.entity } };
  if (input.bank_account) body.payment_methods = [bankMethod(input.bank_account, input.name)];
  return (await createNested(service, accounts, body)).id;
}

/** An account enrollment link: a processing account with its entity (and funding method). */
export async function completeAccountEnrollment(ctx: RuleContext, target: EnrollmentTarget, input: AccountEnrollment): Promise<string> {
  const link = await lockPendingLink(ctx, target);
  if (target.table !== 'intents' || link.type !== 'account_enrollment_link') throw invalidAttributes({ type: 'Not an account enrollment link' });
  const template = ((link.data.account_enrollment_link as { entity?: Record<string, unknown> } | undefined)?.entity) ?? {};
  const accountId = await openProcessingAccount(asService(ctx, target), template, input);
  await finishLink(ctx, target.table, link, accountId);
  return accountId;
}

/**
 * A processing_account_plugin client token (by its hash, hex) opens one processing account: the
 * token's one use is spent first, so a second submission is refused (409) and its intent
 * finishes with it; the intent then records the new `account_id`.
 */
export async function completeAccountPlugin(ctx: RuleContext, tokenHash: string, input: AccountEnrollment): Promise<string> {
  if (!(await spendClientToken(ctx, tokenHash))) throw conflict('This client token has expired or was already used');
  const intentId = await findIntentIdByTokenHash(ctx.tx, ctx.tenant, tokenHash);
  const service: RuleContext = { ...ctx, version: 'v2', principal: { kind: 'secret', keyId: `processing_account_plugin:${intentId ?? tokenHash.slice(0, 16)}`, settings: {} } };
  const accountId = await openProcessingAccount(service, {}, input);
  // `account_id` is read-only to clients: the intent records it through its family's update.
  const intent = intentId ? await lockLink(ctx.tx, 'intents', ctx.tenant, intentId) : null;
  if (intent) await updateNested(ctx, intents, intent, {}, new Map([['account_id', accountId]]));
  return accountId;
}
