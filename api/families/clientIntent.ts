/**
 * What a client token (a browser credential) may put into the one payment it creates. The
 * intent's presets are fixed values, not defaults: the customer, the processing account, the
 * status and (unless `amount_editable`) the amount come from the token; the payment method is the
 * one the browser enters in this very request; nothing may route money elsewhere (transfers).
 * A rule of the payment and payment-method families both (a method typed with a token belongs to
 * the token's account), so it lives beside them rather than in either.
 */
import type { RuleContext } from '../engine/family.ts';
import { isPlainObject, setPath, type Json } from '../engine/view.ts';
import { parseMoney } from '../schema/values.ts';
import { forbidden, invalidAttributes, type ErrorDetails } from '../errors.ts';
import { atWrite } from '../engine/operations.ts';
import { lockUnspentToken } from './intents/repository.ts';
import { spendClientToken } from './intents/tokenSpend.ts';

/** Kinds that may create a payment; `none` is a token made without an intent (CONTRACT §13). */
const PAYMENT_INTENTS = new Set(['payment_form', 'checkout_plugin', 'checkout_page', 'none']);

/** The intent's kind and options; a token made without an intent has kind `none`. */
export function intentOf(intent: Record<string, unknown>): [string, Json] {
  const entry = Object.entries(intent)[0];
  return entry ? [entry[0], isPlainObject(entry[1]) ? entry[1] : {}] : ['none', {}];
}

/** A client token has one use; a payment and the method typed into it are that one use. */
export async function spendClientTokenOnce(ctx: RuleContext): Promise<void> {
  if (ctx.principal.kind !== 'client' || ctx.clientTokenSpent) return;
  const { tokenId } = ctx.principal;
  // Checked (and its row locked) while the create plans; spent at the create's write step, once
  // the processor has answered the card the token pays with.
  if (!(await lockUnspentToken(ctx.tx, tokenId))) throw forbidden('This client token has already been used');
  ctx.clientTokenSpent = true;
  await atWrite(ctx, async () => {
    if (!(await spendClientToken(ctx, tokenId))) throw forbidden('This client token has already been used');
  });
}
/** Preset keys an intent may carry at its top level as well as inside `payment`. */
const TOP_LEVEL_PRESETS = ['amount', 'description', 'order_number', 'customer_id', 'processing_id', 'status'];

/** A field-level answer, so a payment form can mark the input (`sender[account_id]` → nested details). */
function fixedByToken(field: string): Error {
  const details: ErrorDetails = {};
  setPath(details, field.replace(/\[(\w+)\]/g, '.$1'), 'Fixed by the client token');
  return invalidAttributes(details);
}

/** The intent's presets, `payment{}` winning over top-level options. */
function presetsOf(options: Json): Json {
  const top = Object.fromEntries(TOP_LEVEL_PRESETS.filter((k) => options[k] !== undefined).map((k) => [k, options[k]]));
  return { ...top, ...(isPlainObject(options.payment) ? options.payment : {}) };
}

function statusValue(status: unknown): unknown {
  return isPlainObject(status) ? status.value : status;
}

/** A request value must be absent or equal the preset (absent preset: absent value). */
function requireSame(field: string, requested: unknown, preset: unknown): void {
  if (requested !== undefined && requested !== null && requested !== preset) throw fixedByToken(field);
}

/** Only a method typed into this request: no stored method by id, no customer's default. */
function requireInlineMethod(ctx: RuleContext, data: Json): void {
  const sender = isPlainObject(data.sender) ? data.sender : {};
  const receiver = isPlainObject(data.receiver) ? data.receiver : {};
  const byId = data.payment_method_id ?? sender.method_id ?? receiver.method_id;
  const inline = isPlainObject(data.payment_method) && !(Object.keys(data.payment_method).length === 1 && 'id' in data.payment_method);
  if (byId !== undefined && byId !== null) throw forbidden('A client token may only pay with the payment method entered in this request');
  if (!inline) throw forbidden(`A client token payment needs the payment method entered in this request (${ctx.version === 'v1' ? 'payment_method' : 'sender[method]'})`);
}

/**
 * Applies the token's presets to a payment's decoded input and spends the token. Returns whether
 * the payment is an automatic-mode authorization. An intent with `conv_fee: true` has the payer
 * pay the processing fee on top of the amount (priced when the payment is processed: migration
 * `20261126000010`).
 */
export async function applyClientIntent(ctx: RuleContext, type: string, data: Json): Promise<{ automatic: boolean }> {
  if (ctx.principal.kind !== 'client') return { automatic: false };
  const [kind, options] = intentOf(ctx.principal.intent);
  if (type !== 'payment' || !PAYMENT_INTENTS.has(kind)) throw forbidden('This client token may not create this transaction');
  const preset = presetsOf(options);
  const sender = isPlainObject(data.sender) ? data.sender : {};
  const receiver = isPlainObject(data.receiver) ? data.receiver : {};

  requireInlineMethod(ctx, data);
  if (Array.isArray(data.transfers) || Array.isArray(data.ledger)) throw forbidden('A client token payment cannot be split or linked');

  const customerId = typeof preset.customer_id === 'string' ? preset.customer_id : undefined;
  const processingId = typeof preset.processing_id === 'string' ? preset.processing_id : undefined;
  // A token made without an intent fixes no party: the request may name any processing account
  // or customer of the token's own org (the create checks they exist there).
  if (kind !== 'none') {
    requireSame(ctx.version === 'v1' ? 'customer_id' : 'sender[account_id]', data.customer_id ?? sender.account_id, customerId);
    requireSame('processing_id', data.processing_id, processingId);
    requireSame('receiver[account_id]', receiver.account_id, processingId);
  }
  const presetStatus = statusValue(preset.status);
  requireSame('status', data.status, presetStatus);

  if (preset.amount !== undefined) {
    // Validated when the token was made; a token stored before that check is refused here.
    const amount = parseMoney(preset.amount);
    if (!amount.ok) throw forbidden('The client token carries an invalid amount');
    if (data.amount === undefined) data.amount = amount.value;
    else if (data.amount !== amount.value && options.amount_editable !== true) throw fixedByToken('amount');
  }
  for (const key of ['description', 'order_number'] as const) {
    if (typeof preset[key] === 'string' && data[key] === undefined) data[key] = preset[key];
  }
  if (customerId) {
    if (ctx.version === 'v1') data.customer_id = customerId;
    else data.sender = { ...sender, account_id: customerId };
  }
  if (processingId) data.processing_id = processingId;
  if (options.conv_fee === true) data.conv_fee_payer = true;

  await spendClientTokenOnce(ctx);
  return { automatic: presetStatus === 'authorized' };
}

/** The only account a client token's new payment method may belong to (null: none). */
export function clientTokenAccount(intent: Record<string, unknown>): string | null {
  const [kind, options] = intentOf(intent);
  const preset = kind === 'payment_method_form'
    ? (isPlainObject(options.payment_method) ? options.payment_method : {})
    : presetsOf(options);
  const account = preset.customer_id ?? preset.account_id;
  return typeof account === 'string' ? account : null;
}

/**
 * A browser-made method belongs to the token's account or to none, never one the request names;
 * a token made without an intent fixes no account, so the request's own (checked to be of the
 * token's org) stands.
 */
export function applyClientAccount(intent: Record<string, unknown>, data: Json, field: string): void {
  if (intentOf(intent)[0] === 'none') return;
  const account = clientTokenAccount(intent);
  requireSame(field, data.account_id, account);
  data.account_id = account;
}
