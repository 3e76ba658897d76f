/**
 * Repository tier: the funding run's queries (api/families/funding/repository.ts) and the
 * transaction family's funding steps (api/families/transactions/funding.ts) against a real
 * database, each test in a transaction rolled back at its end: which bank method receives a
 * deposit, which payments a run settles (due by the date, held ones when asked, never another
 * account's or tenant's), and that a second settle of the same items finds none.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { insertObjects } from '../../api/db/objects.ts';
import type { StoredObject } from '../../api/db/storedRow.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { loadConfig } from '../../api/config.ts';
import { createDomainServices } from '../../api/domain.ts';
import type { RuleContext } from '../../api/engine/family.ts';
import '../../api/families/index.ts';
import { fundingMethod } from '../../api/families/funding/repository.ts';
import { claimDueForFunding, fundHeld, recordFundingSteps } from '../../api/families/transactions/funding.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };
const domain = createDomainServices(loadConfig());
const runIn = (tx: Db, tenant: Tenant): RuleContext => ({ tx, tenant, version: 'v1', principal: { kind: 'secret', keyId: 'funding_run', settings: {} }, domain });

function row(id: string, type: string, data: Record<string, unknown>): StoredObject {
  return { id, type, created_at: new Date(), modified_at: new Date(), data };
}

/** A processed payment to `account` (its fee set, so the ledger triggers' legs balance), waiting for funding or held. */
const payment = (id: string, account: string, funding: Record<string, unknown>) =>
  row(id, 'payment', { status: 'processed', amount: 1000, fee: 30, processing_id: account, funding_timing: 'standard', ...funding });

async function seed(tx: Db): Promise<void> {
  await insertObjects(tx, 'accounts', acme, [row('acct_shop', 'processing', { name: 'Shop' }), row('acct_other', 'processing', { name: 'Other' })]);
  await insertObjects(tx, 'accounts', globex, [row('acct_globex', 'processing', { name: 'Globex' })]);
}

t.test('a deposit goes to the account\'s first bank method that takes deposits', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    await insertObjects(tx, 'payment_methods', acme, [
      row('pm_card', 'card', { account_id: 'acct_shop', account_defaults: { funding: 'all' } }),
      row('pm_withdrawals', 'bank_account', { account_id: 'acct_shop', account_defaults: { funding: 'withdrawals' } }),
      row('pm_deposits', 'bank_account', { account_id: 'acct_shop', account_defaults: { funding: 'deposits' } }),
    ]);
    await insertObjects(tx, 'payment_methods', globex, [row('pm_globex', 'bank_account', { account_id: 'acct_shop', account_defaults: { funding: 'all' } })]);
    t.equal((await fundingMethod(tx, acme, 'acct_shop'))?.id, 'pm_deposits', 'not a card, not a withdrawals-only account, not another org\'s');
    t.equal(await fundingMethod(tx, acme, 'acct_other'), null, 'none for an account without one');
  });
});

t.test('a run settles the account\'s payments due by its date, held ones only when asked, and each once', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    await insertObjects(tx, 'transactions', acme, [
      payment('txn_due', 'acct_shop', { funding_status: 'pending', funding_date: '2026-11-25' }),
      payment('txn_later', 'acct_shop', { funding_status: 'pending', funding_date: '2026-11-27' }),
      payment('txn_held', 'acct_shop', { funding_status: 'held', funding_date: '2026-11-20' }),
      payment('txn_done', 'acct_shop', { funding_status: 'funded', funding_date: '2026-11-20' }),
      payment('txn_other', 'acct_other', { funding_status: 'pending', funding_date: '2026-11-20' }),
    ]);
    await insertObjects(tx, 'transactions', globex, [payment('txn_globex', 'acct_shop', { funding_status: 'pending', funding_date: '2026-11-20' })]);
    const spec = { accountId: 'acct_shop', dueBy: '2026-11-25', to: 'funded' as const, includeHeld: false };
    const settled = await claimDueForFunding(runIn(tx, acme), spec);
    t.same(settled.map((i) => [i.id, i.was, i.amount]), [['txn_due', 'pending', 1000]], 'the due payment only');
    t.same(await claimDueForFunding(runIn(tx, acme), spec), [], 'a second run finds nothing left');
    const withHeld = await claimDueForFunding(runIn(tx, acme), { ...spec, includeHeld: true });
    t.same(withHeld.map((i) => [i.id, i.was]), [['txn_held', 'held']], 'held ones when asked');
    const status = async (id: string) => (await tx.raw(`select data->>'funding_status' as s from transactions where id = ?`, [id])).rows[0].s;
    t.equal(await status('txn_due'), 'funded');
    t.equal(await status('txn_globex'), 'pending', 'another org\'s payment to an account id it shares is untouched');
    t.equal(await status('txn_other'), 'pending', 'another account\'s is untouched');
  });
});

t.test('the transaction family\'s funding steps: a claim, a held payout and each step\'s operation row with its events', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    await insertObjects(tx, 'transactions', acme, [
      payment('txn_due', 'acct_shop', { funding_status: 'pending', funding_date: '2026-11-25' }),
      payment('txn_held', 'acct_shop', { funding_status: 'held', funding_date: '2026-11-20' }),
    ]);
    const [claimed] = await claimDueForFunding(runIn(tx, acme), { accountId: 'acct_shop', dueBy: '2026-11-25', to: 'funded', includeHeld: false });
    t.match(claimed, { id: 'txn_due', was: 'pending', amount: 1000, fee: 30 });
    await fundHeld(runIn(tx, acme), ['txn_held']);
    await recordFundingSteps(tx, acme, [{ id: 'txn_due', amount: 1000, depositId: 'txn_deposit', steps: ['clear', 'fund'] }, { id: 'txn_held', amount: 1000, steps: ['fund'] }]);
    const status = async (id: string) => (await tx.raw(`select data->>'funding_status' as s from transactions where id = ?`, [id])).rows[0].s;
    t.same([await status('txn_due'), await status('txn_held')], ['funded', 'funded']);
    const operations = (await tx.raw(`select type, data->>'transaction_id' as transaction_id, data->>'deposit_id' as deposit_id from transaction_operations order by data->>'transaction_id', created_at, type`)).rows;
    t.same(operations, [
      { type: 'clear', transaction_id: 'txn_due', deposit_id: 'txn_deposit' },
      { type: 'fund', transaction_id: 'txn_due', deposit_id: 'txn_deposit' },
      { type: 'fund', transaction_id: 'txn_held', deposit_id: null },
    ]);
    const events = (await tx.raw(`select trigger, object_id from events where trigger like 'transaction:operation%' order by object_id, trigger`)).rows;
    t.same(events.map((e: { trigger: string; object_id: string }) => `${e.object_id} ${e.trigger}`), [
      'txn_due transaction:operation', 'txn_due transaction:operation', 'txn_due transaction:operation:clear', 'txn_held transaction:operation',
    ]);
  });
});
