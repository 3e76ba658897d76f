/**
 * Invoice rules: the payer and the biller (inferred when not given), the due date, nested items
 * created with the invoice, the status a client may set, and the items shown nested.
 */
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { applyValues, decodeInput, render, type Json } from '../../engine/view.ts';
import { ApiError, invalidAttributes } from '../../errors.ts';
import { newId } from '../../ids.ts';
import { invoiceItems, itemView, lineItems } from './items.ts';
import { completeCharge, isPercentage } from './itemRules.ts';
import { toCalendarDate } from './kinds.ts';
import { checkPayerMethod, createInlinePayer, fieldName, findPayer, party, resolveBiller } from './parties.ts';
import { RECOMPUTED, recomputeInvoices } from './recompute.ts';
import { deleteItemsOfInvoices, insertItems, itemsOfInvoices } from './repository.ts';

type Data = Json;

function normaliseDueDate(data: Data): void {
  const date = toCalendarDate(data.due_date);
  if (!date) throw invalidAttributes({ due_date: 'Must be a date (YYYY-MM-DD)' });
  data.due_date = date;
}

/** A nested item as the client's version writes it, decoded into a charge row of this invoice. */
function decodeNestedItem(ctx: RuleContext, invoiceId: string, input: Json, index: number): StoredObject {
  const body: Json = { ...input, invoice_id: invoiceId };
  delete body.object;
  delete body.id;
  try {
    if (ctx.version === 'v1' && body.entry_type !== undefined && body.entry_type !== 'charge') {
      throw invalidAttributes({ entry_type: 'Items of an invoice are charges; record payments with POST /transactions allocations' });
    }
    delete body.entry_type;
    const family = ctx.version === 'v1' ? lineItems : invoiceItems;
    const { values } = decodeInput(family, ctx.version, 'charge', body, 'create');
    const now = ctx.domain.now();
    const row = applyValues({ id: newId('item'), type: 'charge', created_at: now, modified_at: now, data: {} }, values);
    if (typeof row.data.amount !== 'number') throw invalidAttributes({ [ctx.version === 'v1' ? 'amount' : 'line_item']: ctx.version === 'v1' ? 'Required' : { value: 'Required' } });
    // Percentage charges are priced once every number charge of the invoice is known (prepareCreate).
    return { ...row, data: completeCharge({ line_number: index + 1, ...row.data }) };
  } catch (error) {
    if (error instanceof ApiError && error.status === 400) throw invalidAttributes({ items: { [index]: error.details ?? error.message } });
    throw error;
  }
}

const pendingItems = new WeakMap<RuleContext['tx'], Map<string, StoredObject[]>>();

function holdItems(ctx: RuleContext, invoiceId: string, items: StoredObject[]): void {
  let map = pendingItems.get(ctx.tx);
  if (!map) pendingItems.set(ctx.tx, (map = new Map()));
  map.set(invoiceId, items);
}

function takeItems(ctx: RuleContext, invoiceId: string): StoredObject[] {
  const map = pendingItems.get(ctx.tx);
  const items = map?.get(invoiceId) ?? [];
  map?.delete(invoiceId);
  return items;
}

async function prepareCreate(ctx: RuleContext, row: StoredObject): Promise<StoredObject> {
  const data: Data = { ...row.data };
  normaliseDueDate(data);
  await createInlinePayer(ctx, data);
  const payer = await findPayer(ctx, party(data, 'payer').account_id);
  if (!payer) throw invalidAttributes({ [fieldName(ctx, 'customer_id', 'payer[account_id]')]: 'Required' });
  await checkPayerMethod(ctx, data);
  data.biller = { ...party(data, 'biller'), account_id: await resolveBiller(ctx, party(data, 'biller').account_id, payer) };
  if (!['draft', 'unpaid', 'open'].includes(String(data.status))) {
    throw invalidAttributes({ status: 'A new invoice is unpaid, or draft when asked for' });
  }
  if (data.status === 'open') data.status = 'unpaid';
  const decoded = ((data.items ?? []) as Json[]).map((item, i) => decodeNestedItem(ctx, row.id, item, i));
  const numberTotal = decoded.filter((item) => !isPercentage(item.data)).reduce((sum, item) => sum + Number(item.data.total), 0);
  const items = decoded.map((item) => (isPercentage(item.data) ? { ...item, data: completeCharge(item.data, numberTotal) } : item));
  delete data.items;
  holdItems(ctx, row.id, items);
  const total = items.reduce((sum, item) => sum + Number(item.data.total), 0);
  data.totals = { total, paid: 0, balance_due: total };
  data.paid_timestamp = null;
  return { ...row, data };
}

/** Statuses a client may move an invoice to; paid and partially paid follow the payments. */
function nextStatus(from: string, to: string): string {
  if (from === to || (to === 'open' && from !== 'draft')) return from;
  if (from === 'closed') throw invalidAttributes({ status: 'A closed invoice cannot be reopened' });
  if (to === 'closed' && from !== 'paid') return to;
  if ((to === 'open' || to === 'unpaid') && from === 'draft') return 'unpaid';
  if (to === 'draft' && from === 'unpaid') return to;
  throw invalidAttributes({ status: `Cannot change status from ${from} to ${to}${to === 'paid' || to === 'partially_paid' ? ' (payments decide it)' : ''}` });
}

/**
 * An invoice's totals as its items left them (./recompute.ts): a draft or closed invoice keeps its
 * status, any other follows its payments; `paid_timestamp` is when it became paid.
 */
function followItems(next: StoredObject, previous: StoredObject): StoredObject {
  const { [RECOMPUTED]: at, ...data } = next.data;
  const { total, paid } = data.totals as { total: number; paid: number };
  const from = String(previous.data.status);
  const status = from === 'draft' || from === 'closed' ? from : total > 0 && paid >= total ? 'paid' : paid > 0 ? 'partially_paid' : 'unpaid';
  data.status = status;
  data.totals = { total, paid, balance_due: Math.max(total - paid, 0) };
  data.paid_timestamp = status !== 'paid' ? null : from === 'paid' ? (previous.data.paid_timestamp ?? null) : at;
  return { ...next, data };
}

async function prepareUpdate(ctx: RuleContext, next: StoredObject, previous: StoredObject): Promise<StoredObject> {
  if (RECOMPUTED in next.data) return followItems(next, previous);
  const data: Data = { ...next.data };
  if (data.items !== undefined) {
    throw invalidAttributes({ items: `Add items with POST ${ctx.version === 'v1' ? '/line_items' : '/invoice_items'} {invoice_id, …}` });
  }
  if (party(data, 'payer').account_id !== party(previous.data, 'payer').account_id) {
    throw invalidAttributes({ [fieldName(ctx, 'customer_id', 'payer[account_id]')]: 'The payer of an invoice cannot change' });
  }
  if (party(data, 'biller').account_id !== party(previous.data, 'biller').account_id) {
    data.biller = { ...party(data, 'biller'), account_id: await resolveBiller(ctx, party(data, 'biller').account_id, null) };
  }
  if (party(data, 'payer').method_id !== party(previous.data, 'payer').method_id) await checkPayerMethod(ctx, data);
  if (data.due_date !== previous.data.due_date) normaliseDueDate(data);
  data.status = nextStatus(String(previous.data.status), String(data.status));
  return { ...next, data };
}

async function afterWrite(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  if (!previous) {
    await insertItems(ctx.tx, ctx.tenant, takeItems(ctx, next.id).map((item) => ({ ...item, data: { ...item.data, invoice_id: next.id } })));
  } else if (previous.data.status === 'draft' && next.data.status !== 'draft') {
    await recomputeInvoices(ctx, [next.id]);
  }
}

async function beforeDelete(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  await deleteItemsOfInvoices(ctx.tx, ctx.tenant, rows.map((r) => r.id));
}

/** `items`: v1 every line item (charges and payments), v2 the invoice items (charges). */
async function load(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  if (rows.length === 0) return;
  const items = await itemsOfInvoices(ctx.tx, ctx.tenant, rows.map((r) => r.id));
  for (const row of rows) {
    const own = items.filter((item) => item.data.invoice_id === row.id && (ctx.version === 'v1' || item.type === 'charge'));
    row.data = { ...row.data, items: own.map((item) => render(itemView, ctx.version, item)) };
  }
}

/**
 * An invoice's change is written on its own when it keeps its status (which payments move and
 * whose way out of draft recomputes the invoice), its parties' accounts and the payer's method
 * (which prepare reads), and names no items.
 */
function plainChange(next: StoredObject, previous: StoredObject): boolean {
  const same = (side: 'payer' | 'biller', key: string) => party(next.data, side)[key] === party(previous.data, side)[key];
  return next.data.items === undefined && next.data.status === previous.data.status
    && same('payer', 'account_id') && same('biller', 'account_id') && same('payer', 'method_id');
}

export const invoiceRules: FamilyRules = {
  plainChange,
  prepare: (ctx, next, previous) => (previous ? prepareUpdate(ctx, next, previous) : prepareCreate(ctx, next)),
  afterWrite,
  beforeDelete,
  load,
};
