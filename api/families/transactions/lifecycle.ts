/**
 * The transaction state machine (spec §3, CONTRACT §7) and the events each step emits.
 *
 *   (new) ──► processing ──► processed ──► voided
 *     │                          ▲   └───► rejected   (bank account refused after processing)
 *     ├────► authorized ─────────┘ capture
 *     │          └─────────────────► voided  (void, or automatic-mode expiry)
 *     └────► declined
 */
import type { EventDraft, Trigger } from '../../db/events.ts';
import type { StoredObject } from '../../engine/family.ts';
import { TRANSFER_TRIGGER } from '../transfers/triggers.ts';
import { TRANSACTION_TRIGGERS } from './triggers.ts';

export const TYPES = ['payment', 'payout', 'refund', 'deposit', 'withdraw', 'chargeback', 'chargeback_reversal'];
/** Types only the service creates (funding runs, the card network). */
export const SYSTEM_TYPES = ['chargeback', 'chargeback_reversal'];

/** Who made a transaction the service makes on its own (stored as `made_by`; no client can set it). */
export type SystemMaker = 'funding_run' | 'card_network';

export function isSystemMade(row: StoredObject): boolean {
  return typeof row.data.made_by === 'string';
}
export const STATUSES = ['processing', 'authorized', 'processed', 'voided', 'declined', 'rejected'];

/** Status changes a client may ask for by PUT, and what the worker does on its own. */
const ALLOWED: Record<string, string[]> = {
  processing: ['processed', 'voided', 'rejected'],
  authorized: ['processed', 'voided'],
  processed: ['voided', 'rejected'],
  voided: [],
  declined: [],
  rejected: [],
};

/**
 * The stored value a status change the service makes on its own (transitions.ts) carries through
 * the family's update: its status code (null: the target status's own). No client input reaches
 * it (the update decodes only declared fields); the family's prepare reads it and removes it.
 */
export const SYSTEM_TRANSITION = 'system_transition';

/**
 * The stored marker of a funding step the service takes on its own (funding.ts: a run's claim, a
 * release's payout, a refused deposit's return to held): the family's prepare reads it, allows
 * only the funding_status moves below, and removes it. No client input reaches it, as above.
 */
export const FUNDING_STEP = 'funding_step';

/** The funding_status moves the service makes: cleared (held without a funding method), funded, and held again when a deposit is refused. */
const FUNDING_MOVES: Record<string, string[]> = { pending: ['held', 'funded'], held: ['funded'], funded: ['held'] };

export function canMoveFunding(from: unknown, to: unknown): boolean {
  return typeof from === 'string' && typeof to === 'string' && (FUNDING_MOVES[from]?.includes(to) ?? false);
}

export function canTransition(from: string, to: string): boolean {
  return ALLOWED[from]?.includes(to) ?? false;
}

/** The trigger of a newly created transaction, by type (v1 names for payouts and withdrawals). */
const CREATE_TRIGGER: Record<string, Trigger> = {
  payment: TRANSACTION_TRIGGERS.payment,
  refund: TRANSACTION_TRIGGERS.refund,
  payout: TRANSACTION_TRIGGERS.credit,
  deposit: TRANSACTION_TRIGGERS.deposit,
  withdraw: TRANSACTION_TRIGGERS.reversal,
  chargeback: TRANSACTION_TRIGGERS.chargeback,
  chargeback_reversal: TRANSACTION_TRIGGERS.chargebackReversal,
};

/** Stored minor units as the API shows money (7.99, never 799). */
function units(minor: unknown): number | null {
  return typeof minor === 'number' ? minor / 100 : minor === null || minor === undefined ? null : Number(minor) / 100;
}

function event(trigger: Trigger, row: StoredObject, extra: Record<string, unknown> = {}): EventDraft {
  return {
    trigger,
    objectType: 'transaction',
    objectId: row.id,
    value: { type: row.type, status: row.data.status, amount: units(row.data.amount), status_code: row.data.status_code ?? null, ...extra },
  };
}

export function creationEvents(row: StoredObject): EventDraft[] {
  const status = row.data.status;
  if (status === 'declined') return [event(TRANSACTION_TRIGGERS.decline, row)];
  const events = [event(CREATE_TRIGGER[row.type], row)];
  if (status === 'authorized') events.push(event(TRANSACTION_TRIGGERS.authorized, row));
  if (status === 'processed') events.push(event(TRANSACTION_TRIGGERS.processed, row));
  const plan = row.data.transfer_plan;
  if (Array.isArray(plan)) {
    for (const entry of plan as Array<Record<string, unknown>>) {
      if (entry.entry_type !== 'transfer') continue;
      events.push({ trigger: TRANSFER_TRIGGER, objectType: 'transfer', objectId: String(entry.id), value: { transaction_id: row.id, account_id: entry.account_id, amount: units(entry.amount) } });
    }
  }
  return events;
}

/** A transaction the service makes (deposit, withdrawal, chargeback): its type's trigger only. */
export function systemCreationEvents(row: StoredObject): EventDraft[] {
  return [event(CREATE_TRIGGER[row.type], row)];
}

export function transitionEvents(next: StoredObject, previous: StoredObject): EventDraft[] {
  const from = previous.data.status;
  const to = next.data.status;
  if (from === to) return [];
  const extra = { previous_status: from };
  if (to === 'processed') return [event(TRANSACTION_TRIGGERS.processed, next, extra)];
  if (to === 'voided') return [event(TRANSACTION_TRIGGERS.void, next, extra)];
  if (to === 'rejected') {
    const events = [event(TRANSACTION_TRIGGERS.reject, next, extra)];
    if (next.data.payment_method_type === 'bank_account') events.push(event(TRANSACTION_TRIGGERS.bankAccountReject, next, extra));
    return events;
  }
  return [];
}

export function statusCodeFor(to: string, reason?: string): { status_code: string; status_message: string } {
  if (reason) return { status_code: reason, status_message: reason.replace(/_/g, ' ') };
  if (to === 'voided') return { status_code: 'voided', status_message: 'Voided' };
  if (to === 'rejected') return { status_code: 'bank_account_rejected', status_message: 'Rejected by the bank' };
  return { status_code: 'approved', status_message: 'Approved' };
}
