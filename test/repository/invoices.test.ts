/**
 * Repository tier: invoice and item SQL beyond the generic operations
 * (api/families/invoices/repository.ts) against a real database, each test in a transaction rolled
 * back at its end.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { insertObjects } from '../../api/db/objects.ts';
import type { StoredObject } from '../../api/db/storedRow.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { loadConfig } from '../../api/config.ts';
import { createDomainServices } from '../../api/domain.ts';
import type { RuleContext } from '../../api/engine/family.ts';
import { recordPaymentAllocations } from '../../api/families/invoices/paidBy.ts';
// The invoice family declares itself to the recompute as it is made (api/families/invoices/declared.ts).
import '../../api/families/invoices/family.ts';
import { recomputeInvoices } from '../../api/families/invoices/recompute.ts';
import { allocationsOfTransactions, deleteItemsOfInvoices, insertItems, itemsOfInvoices, lockInvoices, numberChargesTotal } from '../../api/families/invoices/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

function item(id: string, type: string, data: Record<string, unknown>): StoredObject {
  return { id, type, created_at: new Date(), modified_at: new Date(), data };
}

async function seed(tx: Db): Promise<void> {
  await insertObjects(tx, 'invoices', acme, [item('inv_1', 'bill', { status: 'unpaid' }), item('inv_2', 'bill', { status: 'unpaid' })]);
  await insertObjects(tx, 'invoices', globex, [item('inv_g', 'bill', { status: 'unpaid' })]);
  await insertItems(tx, acme, [
    item('itm_c', 'charge', { invoice_id: 'inv_1', total: 500, line_number: 2 }),
    item('itm_a', 'charge', { invoice_id: 'inv_1', total: 1000, line_number: 1 }),
    item('itm_p', 'charge', { invoice_id: 'inv_1', total: 150, value_units: 'percentage', line_number: 3 }),
    item('itm_pay', 'payment', { invoice_id: 'inv_1', total: 300, transaction_id: 'txn_1' }),
    item('itm_2', 'charge', { invoice_id: 'inv_2', total: 70, line_number: 1 }),
  ]);
  await insertItems(tx, globex, [item('itm_g', 'charge', { invoice_id: 'inv_1', total: 9999, transaction_id: 'txn_1' })]);
}

t.test('an invoice\'s items come in line order, from its own tenant only', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.same((await itemsOfInvoices(tx, acme, ['inv_1'])).map((i) => i.id), ['itm_a', 'itm_c', 'itm_p', 'itm_pay']);
    t.same(await itemsOfInvoices(tx, acme, []), []);
  });
});

t.test('number charges total the charges that are not percentages, less the items named', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.equal(await numberChargesTotal(tx, acme, 'inv_1'), 1500);
    t.equal(await numberChargesTotal(tx, acme, 'inv_1', ['itm_c']), 1000);
    t.equal(await numberChargesTotal(tx, globex, 'inv_1'), 9999, 'each tenant its own');
  });
});

t.test('a transaction\'s allocations are its tenant\'s items that name it', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.same((await allocationsOfTransactions(tx, acme, ['txn_1'])).map((i) => i.id), ['itm_pay']);
  });
});

t.test('invoices lock in id order and only the tenant\'s; deleting items keeps to the invoices and tenant named', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.same([...(await lockInvoices(tx, acme, ['inv_2', 'inv_g', 'inv_1', 'inv_2'])).keys()], ['inv_1', 'inv_2']);
    await deleteItemsOfInvoices(tx, acme, ['inv_1']);
    t.same((await itemsOfInvoices(tx, acme, ['inv_1', 'inv_2'])).map((i) => i.id), ['itm_2']);
    t.same((await itemsOfInvoices(tx, globex, ['inv_1'])).map((i) => i.id), ['itm_g'], 'another tenant\'s items stay');
  });
});

t.test('a payment\'s allocations go through the item family\'s create: the invoice recomputes, the item is audited, a closed invoice refuses one', async (t) => {
  const domain = createDomainServices(loadConfig());
  await withRollback(db, async (tx) => {
    const ctx: RuleContext = { tx, tenant: acme, version: 'v1', principal: { kind: 'secret', keyId: 'test', settings: {} }, domain };
    await insertObjects(tx, 'invoices', acme, [item('inv_open', 'bill', { status: 'unpaid' }), item('inv_closed', 'bill', { status: 'closed' })]);
    await insertItems(tx, acme, [item('itm_open', 'charge', { invoice_id: 'inv_open', amount: 1000, qty: 1, total: 1000 })]);
    await recomputeInvoices(ctx, ['inv_open']);
    const payment = item('txn_paying', 'payment', {});
    await recordPaymentAllocations(ctx, payment, [{ invoice_id: 'inv_open', amount: 1000 }]);
    const [allocation] = await allocationsOfTransactions(tx, acme, ['txn_paying']);
    t.match(allocation, { type: 'payment', data: { invoice_id: 'inv_open', amount: 1000, transaction_id: 'txn_paying', external_payment: false } });
    t.match(allocation.id, /^item_/, 'an id of the item family');
    const [invoice] = (await tx.raw(`select data from invoices where id = 'inv_open'`)).rows;
    t.match(invoice.data, { status: 'paid', totals: { balance_due: 0 } }, 'the item rules recomputed the invoice');
    const audits = (await tx.raw(`select data->>'action' as action from audit_events where data->>'object_id' = ?`, [allocation.id])).rows;
    t.same(audits, [{ action: 'create' }]);
    const refused = await recordPaymentAllocations(ctx, payment, [{ invoice_id: 'inv_closed', amount: 0 }]).then(() => null, (error: unknown) => error);
    t.match(refused, { status: 400, details: { invoice_id: 'A closed invoice accepts no payment' } }, 'a closed invoice refuses it');
  });
});
