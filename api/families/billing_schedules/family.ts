/**
 * Billing schedules (CONTRACT §12): v1 `customer_id`/`processing_id`, `recurring_frequency` with
 * `monthly`/`annually`/`bimonthly`/`quarterly` details, `charges`; v2 `payer`/`biller`,
 * `recurring_schedule{type, …}`, `items`, `totals.recurring_amount`, `autopay_settings.allowed`.
 * Charges are rows of their own (./charges.ts) shown nested; `invoices` (non-default) lists the
 * invoices a schedule has produced, and the amounts due sum them.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { freeTextKind } from '../invoices/kinds.ts';
import { scheduleRules } from './rules.ts';
import { declareScheduleFamily } from './scheduleFamily.ts';
import { AUTOMATIC_PAYMENT_TRIGGER } from './triggers.ts';

export const FREQUENCIES = ['daily', 'weekly', 'biweekly', 'bimonthly', 'monthly', 'quarterly', 'annually'];

const day = (store: string, v1: string, max = 31): FieldSpec => ({ store: `recurring.${store}`, type: 'integer', v1, v2: `recurring_schedule.${v1}`, min: 1, max });

const fields: FieldSpec[] = [
  freeTextKind('schedule'),
  idField,
  { store: 'schedule_type', type: 'string', v1: 'type', v2: 'type', maxLength: 64 },
  { store: 'payer.account_id', type: 'id', v1: 'customer_id', v2: 'payer.account_id', required: true },
  { store: 'payer.method_id', type: 'id', v1: 'payment_method_id', v2: 'payer.method_id' },
  { store: 'biller.account_id', type: 'id', v1: 'processing_id', v2: 'biller.account_id' },
  { store: 'description', type: 'string', v1: 'description', v2: 'description', maxLength: 1024 },
  { store: 'start_date', type: 'string', v1: 'start_date', v2: 'start_date', required: true, maxLength: 32 },
  { store: 'end_date', type: 'string', v1: 'end_date', v2: 'end_date', maxLength: 32 },
  { store: 'recurring.type', type: 'string', v1: 'recurring_frequency', v2: 'recurring_schedule.type', enum: FREQUENCIES, required: true },
  day('monthly.billing_day', 'monthly.billing_day'),
  day('annually.billing_day', 'annually.billing_day'),
  day('annually.billing_month', 'annually.billing_month', 12),
  day('bimonthly.first_billing_day', 'bimonthly.first_billing_day'),
  day('bimonthly.second_billing_day', 'bimonthly.second_billing_day'),
  { store: 'recurring.quarterly', type: 'json', v1: 'quarterly', v2: 'recurring_schedule.quarterly', maxLength: 1024 },
  { store: 'charges', type: 'list', v1: 'charges', v2: 'items' },
  { store: 'recurring_amount', type: 'money', v1: 'recurring_amount', v2: 'totals.recurring_amount', readOnly: true },
  { store: 'totals.total', type: 'money', v1: 'total_due', v2: 'totals.total', readOnly: true },
  { store: 'totals.paid', type: 'money', v1: 'total_paid', v2: 'totals.paid', readOnly: true },
  { store: 'totals.balance_due', type: 'money', v1: 'amount_due', v2: 'totals.balance_due', readOnly: true },
  { store: 'autopay_allowed', type: 'boolean', v1: 'autopay_allowed', v2: 'autopay_settings.allowed', default: true },
  { store: 'invoices', type: 'list', v1: 'invoices', v2: 'invoices', readOnly: true, nonDefault: true },
  attrsField,
  ...timestampFields,
];

export const billingSchedules: Family = declareScheduleFamily({
  name: 'billing_schedule',
  table: 'billing_schedules',
  idPrefix: 'bscd',
  types: ['schedule'],
  fields,
  objectName: () => 'billing_schedule',
  rules: scheduleRules,
  /** a schedule's automatic payment is made (autopay.ts) */
  triggers: [AUTOMATIC_PAYMENT_TRIGGER],
});
