/**
 * Repository tier: the billing run's queries (api/families/billing_schedules/repository.ts)
 * against a real database, each test in a transaction rolled back at its end: which schedules are
 * due an invoice, which invoices the automatic payments try, one invoice per schedule and date,
 * and every query inside its own tenant.
 */
import t from 'tap';
import { insertObjects } from '../../api/db/objects.ts';
import type { StoredObject } from '../../api/db/storedRow.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import {
  chargesOfSchedules, insertCharges, invoicesForAutopay, invoiceTotalsOfSchedules, recurringAmountOf,
  schedulesToInvoice,
} from '../../api/families/billing_schedules/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

function row(id: string, type: string, data: Record<string, unknown>): StoredObject {
  return { id, type, created_at: new Date(), modified_at: new Date(), data };
}

const invoice = (id: string, data: Record<string, unknown>) => row(id, 'bill', { status: 'unpaid', due_date: '2026-11-20', ...data });

t.test('schedules due an invoice: started, and billed through a date before today (or their end)', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'billing_schedules', acme, [
      row('bs_new', 'subscription', { start_date: '2026-11-01' }),
      row('bs_billed', 'subscription', { start_date: '2026-01-01', billed_through: '2026-11-25' }),
      row('bs_behind', 'subscription', { start_date: '2026-01-01', billed_through: '2026-10-25' }),
      row('bs_ended', 'subscription', { start_date: '2025-01-01', end_date: '2025-12-31', billed_through: '2025-12-31' }),
      row('bs_future', 'subscription', { start_date: '2026-12-01' }),
    ]);
    await insertObjects(tx, 'billing_schedules', globex, [row('bs_globex', 'subscription', { start_date: '2026-11-01' })]);
    const due = (await schedulesToInvoice(tx, acme, '2026-11-25')).map((s) => s.id).sort();
    t.same(due, ['bs_behind', 'bs_new'], 'not the billed, ended or future ones, nor another org\'s');
  });
});

t.test('one invoice per schedule and due date: the database refuses a second', async (t) => {
  await withRollback(db, async (tx) => {
    const first = invoice('inv_1', { billing_schedule_id: 'bs_1' });
    await insertObjects(tx, 'invoices', acme, [first, invoice('inv_3', { billing_schedule_id: 'bs_1', due_date: '2026-12-20' })]);
    await t.rejects(tx.transaction((inner) => insertObjects(inner, 'invoices', acme, [{ ...first, id: 'inv_2' }])), /duplicate key/, 'the same schedule and date again');
  });
});

t.test('the automatic payments try open invoices of the window that allow it, once a day', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'invoices', acme, [
      invoice('inv_due', {}),
      invoice('inv_partial', { status: 'partially_paid', due_date: '2026-11-18' }),
      invoice('inv_paid', { status: 'paid' }),
      invoice('inv_manual', { autopay_allowed: false }),
      invoice('inv_tried', { last_autopay_on: '2026-11-25' }),
      invoice('inv_old', { due_date: '2026-11-01' }),
    ]);
    await insertObjects(tx, 'invoices', globex, [invoice('inv_globex', {})]);
    const tried = await invoicesForAutopay(tx, acme, '2026-11-15', '2026-11-25', '2026-11-25');
    t.same(tried.map((i) => i.id), ['inv_partial', 'inv_due'], 'by due date; not paid, manual, tried today, past the window or another org\'s');
  });
});

t.test('a schedule\'s recurring amount is what its charges total, less those being deleted', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'billing_schedules', acme, [row('bs_1', 'subscription', { start_date: '2026-11-01', recurring_amount: 0 })]);
    await insertCharges(tx, acme, [
      row('chg_a', 'option_1', { billing_schedule_id: 'bs_1', total: 500, position: 1 }),
      row('chg_b', 'option_1', { billing_schedule_id: 'bs_1', total: 250, position: 0 }),
    ]);
    await insertCharges(tx, globex, [row('chg_globex', 'option_1', { billing_schedule_id: 'bs_1', total: 9999 })]);
    t.same((await chargesOfSchedules(tx, acme, ['bs_1'])).map((c) => c.id), ['chg_b', 'chg_a'], 'in position order, only the tenant\'s');
    t.equal(await recurringAmountOf(tx, acme, 'bs_1'), 750);
    t.equal(await recurringAmountOf(tx, acme, 'bs_1', ['chg_a']), 250);
  });
});

t.test('what a schedule\'s invoices owe counts open invoices only', async (t) => {
  await withRollback(db, async (tx) => {
    const totals = (total: number, paid: number) => ({ totals: { total, paid, balance_due: total - paid } });
    await insertObjects(tx, 'invoices', acme, [
      invoice('inv_a', { billing_schedule_id: 'bs_1', ...totals(1000, 400) }),
      invoice('inv_b', { billing_schedule_id: 'bs_1', due_date: '2026-12-20', status: 'closed', ...totals(500, 0) }),
    ]);
    t.same(await invoiceTotalsOfSchedules(tx, acme, ['bs_1']), [{ billing_schedule_id: 'bs_1', total: 1500, paid: 400, balance_due: 600 }]);
    t.same(await invoiceTotalsOfSchedules(tx, globex, ['bs_1']), [], 'nothing for another org');
  });
});
