/** Transaction SQL beyond the generic operations: refund totals, transfer rows, timed jobs. */
import { AUDIT_SETTING_SQL, currentAuditSetting } from '../../db/auditContext.ts';
import { auditCreatedSql, auditRows, createdAudit, ownAuditSql } from '../../db/auditStatement.ts';
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { JSONB_LIST, jsonList } from '../../db/jsonList.ts';
import { tenantsEventsInsert, type EventDraft } from '../../db/events.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { Sql } from '../../db/connection.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';
import { operationEvents, type OperationDraft } from '../transaction_operations/operations.ts';
import { operationsInsert } from '../transaction_operations/repository.ts';
import { METHOD_ACCOUNT_SQL } from '../payment_methods/accountSql.ts';
import { methodsInsert } from '../payment_methods/repository.ts';

const ROW = STORED_ROW;

/** Locks the original of a refund: every refund of one payment queues on this lock. */
export async function lockTransaction(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db, `select ${ROW} from transactions where id = ? and org_id = ? and environment = ? for update`, [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

/** The worker's lock on a transaction it changes on its own (any tenant: the job names the row). */
export async function lockTransactionById(db: Db, id: string): Promise<(StoredObject & { org_id: string; environment: Tenant['environment'] }) | null> {
  const found = await rows<StoredObject & { org_id: string; environment: Tenant['environment'] }>(db,
    `select ${ROW}, org_id, environment from transactions where id = ? for update`, [id]);
  return found[0] ?? null;
}

/** Minor units already taken back from a transaction by refunds (and chargebacks) that still stand. */
export async function refundedAmount(db: Db, transactionId: string): Promise<number> {
  const found = await rows<{ total: number }>(db,
    `select coalesce(sum(f.amount), 0)::bigint as total
       from transfers f join transactions r on r.id = f.transaction_id
      where f.assoc_transaction_id = ? and f.entry_type in ('refund', 'chargeback')
        and r.data->>'status' not in ('voided', 'declined', 'rejected')`,
    [transactionId]);
  return Number(found[0].total);
}

export interface TransferRow {
  id: string;
  transaction_id: string;
  account_id: string | null;
  assoc_transaction_id: string | null;
  entry_type: string;
  amount: number;
}

export async function insertTransfers(db: Db, tenant: Tenant, entries: TransferRow[]): Promise<void> {
  if (entries.length === 0) return;
  await rows(db,
    `insert into transfers (id, org_id, environment, transaction_id, account_id, assoc_transaction_id, entry_type, amount)
     select id, ?, ?, transaction_id, account_id, assoc_transaction_id, entry_type, amount
       from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[])
         as t(id, transaction_id, account_id, assoc_transaction_id, entry_type, amount)`,
    [tenant.orgId, tenant.environment, entries.map((e) => e.id), entries.map((e) => e.transaction_id), entries.map((e) => e.account_id),
      entries.map((e) => e.assoc_transaction_id), entries.map((e) => e.entry_type), entries.map((e) => e.amount)]);
}

export async function transfersOf(db: Db, transactionIds: string[]): Promise<Array<TransferRow & { created_at: Date }>> {
  if (transactionIds.length === 0) return [];
  return rows(db,
    `select id, transaction_id, account_id, assoc_transaction_id, entry_type, amount, created_at
       from transfers where transaction_id = any(?::text[]) order by created_at, id`,
    [transactionIds]);
}

export async function findMethod(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db, `select ${ROW} from payment_methods where id = ? and org_id = ? and environment = ?`, [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

/** A method that pays by default (v2 account_defaults.paying payments/all) and is active, of the table or alias `r`. */
const PAYING_METHOD_SQL = (r: string) => `${r}.data->'account_defaults'->>'paying' in ('payments', 'all')
             and coalesce(${r}.data->>'status', case when ${r}.data->>'keep_active' = 'false' then 'inactive' end) is distinct from 'inactive'`;

/** The account's default paying method (v2 account_defaults.paying payments/all; v1 default_payment_method), as SQL. */
function payingMethodSql(tenant: Tenant, accountId: string): Sql {
  const scope = tenantScan(tenant);
  return {
    sql: `select ${ROW} from payment_methods
           where ${scope.sql} and ${METHOD_ACCOUNT_SQL} = ? and ${PAYING_METHOD_SQL('payment_methods')}
           order by created_at, id limit 1`,
    bindings: [...scope.bindings, accountId],
  };
}

export async function defaultPayingMethod(db: Db, tenant: Tenant, accountId: string): Promise<StoredObject | null> {
  const { sql, bindings } = payingMethodSql(tenant, accountId);
  return (await rows<StoredObject>(db, sql, bindings))[0] ?? null;
}

export async function findAccount(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db, `select ${ROW} from accounts where id = ? and org_id = ? and environment = ?`, [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

export interface JobDraft {
  task: string;
  payload: Record<string, unknown>;
  runAt: Date;
  /** a job key makes re-enqueueing replace, not duplicate */
  key?: string;
}

/** Enqueues a graphile-worker job in the caller's transaction; a job key makes re-enqueueing replace, not duplicate. */
export async function scheduleJob(db: Db, task: string, payload: Record<string, unknown>, runAt: Date, jobKey?: string): Promise<void> {
  await rows(db, 'select graphile_worker.add_job(?, ?::json, run_at => ?::timestamptz, job_key => ?, max_attempts => 25)',
    [task, JSON.stringify(payload), runAt.toISOString(), jobKey ?? null]);
}

export async function removeJob(db: Db, jobKey: string): Promise<void> {
  await rows(db, 'select graphile_worker.remove_job(?)', [jobKey]);
}

/** The rows a payment names, read in one round trip; a role is absent when not asked for or not found. */
export interface PaymentParties {
  customer?: StoredObject;
  processing?: StoredObject;
  method?: StoredObject;
  /** the environment's first processing account, when the payment names none */
  defaultProcessing?: StoredObject;
  /** the payer's default paying method, when the payment names none */
  payingMethod?: StoredObject;
}

export interface PartiesWanted {
  customerId?: string;
  processingId?: string;
  methodId?: string;
  defaultProcessing: boolean;
  payingMethodOf?: string;
}

/** One payment's read: its tenant and the parties it names. */
export interface PartiesAsked {
  tenant: Tenant;
  wanted: PartiesWanted;
}

export async function readPaymentParties(db: Db, tenant: Tenant, wanted: PartiesWanted): Promise<PaymentParties> {
  if (!wanted.customerId && !wanted.processingId && !wanted.methodId && !wanted.defaultProcessing && !wanted.payingMethodOf) return {};
  return (await readManyPaymentParties(db, [{ tenant, wanted }]))[0];
}

/**
 * The parties of several payments in one round trip (payments that arrive together read together:
 * api/families/transactions/payment.ts), each payment's within its own tenant: one row per role
 * found, tagged with the payment's place in `asks`. Answers the parties in the order asked.
 *
 * The asks go as one JSON document: a set-returning function over it is estimated at the same
 * rows whatever it holds, so the prepared statement's generic plan costs what its custom plans
 * cost and Postgres keeps it. Over arrays the planner sees each group's size, judges the generic
 * plan dearer than a one-payment custom plan and plans every execution again, which costs several
 * times what running it does.
 */
export async function readManyPaymentParties(db: Db, asks: PartiesAsked[]): Promise<PaymentParties[]> {
  const inTenant = (alias: string) => `${alias}.org_id = w.org_id and ${alias}.environment = w.environment`;
  const scan = (alias: string) => `tenant_key(${alias}.org_id, ${alias}.environment) = w.tenant_key and ${inTenant(alias)}`;
  const columns = ROW.split(', ').map((column) => `r.${column}`).join(', ');
  const found = await rows<StoredObject & { role: keyof PaymentParties; ask: number }>(db,
    `select w.ask, p.*
       from json_to_recordset(?::json)
         as w(ask int, org_id text, environment text, tenant_key text, customer_id text, processing_id text, method_id text,
              default_processing boolean, paying_method_of text)
       cross join lateral (
         (select 'customer' as role, ${columns} from accounts r where w.customer_id is not null and r.id = w.customer_id and ${inTenant('r')})
         union all
         (select 'processing' as role, ${columns} from accounts r where w.processing_id is not null and r.id = w.processing_id and ${inTenant('r')})
         union all
         (select 'method' as role, ${columns} from payment_methods r where w.method_id is not null and r.id = w.method_id and ${inTenant('r')})
         union all
         (select 'defaultProcessing' as role, ${columns} from accounts r
           where w.default_processing and ${scan('r')} and r.type = 'processing' order by r.created_at, r.id limit 1)
         union all
         (select 'payingMethod' as role, ${columns} from payment_methods r
           where w.paying_method_of is not null and ${scan('r')} and r.${METHOD_ACCOUNT_SQL} = w.paying_method_of and ${PAYING_METHOD_SQL('r')}
           order by r.created_at, r.id limit 1)) p`,
    [JSON.stringify(asks.map(({ tenant, wanted }, ask) => ({
      ask, org_id: tenant.orgId, environment: tenant.environment, tenant_key: tenantScan(tenant).bindings[0],
      customer_id: wanted.customerId, processing_id: wanted.processingId, method_id: wanted.methodId,
      default_processing: wanted.defaultProcessing, paying_method_of: wanted.payingMethodOf,
    })))]);
  const parties = asks.map((): PaymentParties => ({}));
  for (const { role, ask, ...row } of found) parties[ask][role] = row;
  return parties;
}

/** Everything one payment writes. */
export interface PaymentWrite {
  /** an inline method, stored with the payment */
  method?: StoredObject;
  transaction: StoredObject;
  /** the funding fields the statement is expected to add to the transaction (`expectedFunding`), or null */
  funding: Record<string, unknown> | null;
  /** the step its status is (authorize, process, decline) */
  operations: OperationDraft[];
  events: EventDraft[];
  jobs: JobDraft[];
}

/** A payment to write, with its tenant and the actor that made it (its `settle.audit` setting). */
export interface PaymentItem {
  tenant: Tenant;
  write: PaymentWrite;
  audit: string | null;
}

/**
 * A processed transaction's data with its funding fields, set as the funding trigger sets them
 * (migration 20261207002200), from `i` (its row) and `f` (`FUNDING_LOOKUPS`): the trigger then
 * does not fire for the row, and a statement of many payments pays no trigger call for each.
 */
const FUNDED_DATA = `case when transaction_funding_due(i.type, i.data)
                then i.data || transaction_funding_fields_of(i.type, i.data, f.account, f.clock) else i.data end`;

/**
 * The row `i`'s processing account's data (read only when it is due) and its tenant's test clock,
 * as the trigger reads them: a lookup by key each, however large the tables (the fence keeps the
 * planner from joining whole tables instead).
 */
const FUNDING_LOOKUPS = `select (select a.data from accounts a where a.id = i.data->>'processing_id' and transaction_funding_due(i.type, i.data)) as account,
                (select c.now from test_clocks c where c.org_id = i.org_id and c.environment = i.environment) as clock
          offset 0`;

/**
 * One statement, so one round trip and atomic without BEGIN/COMMIT, for one payment or a group
 * of them (group commit, api/db/groupWriter.ts): the inline methods, the transactions (with their
 * funding fields, `FUNDED_DATA`; their triggers post the ledger and reporting changes), their
 * operations, the events (the worker's dispatcher follows the outbox:
 * workers/webhooks/dispatchLoop.ts), the transactions' timed jobs,
 * and the audit events of the methods and the transactions, each with its own payment's actor
 * (built here, see api/db/auditStatement.ts: the rows' own parts mark both tables,
 * so their audit triggers leave this statement to its own audit part). A group needs that audit
 * part: the triggers' actor is one per statement. Answers the stored transactions in order.
 */
export async function insertPayments(db: Db, items: PaymentItem[]): Promise<StoredObject[]> {
  const audit = auditRows.inStatement;
  if (items.length > 1 && !audit) throw new Error('Payments are written together only when their statement audits them');
  const methods = methodsInsert(items.filter((item) => item.write.method).map((item) => ({ tenant: item.tenant, row: item.write.method!, audit: item.audit })));
  // A transaction's event is built with the funding fields the statement is expected to add: when
  // it adds exactly those, the database takes the event as built (api/db/auditStatement.ts).
  const txnAudit = createdAudit('transaction', items.map(({ write: { transaction, funding }, audit: setting }) => ({
    row: funding ? { ...transaction, data: { ...transaction.data, ...funding } } : transaction, audit: setting,
  })), audit);
  const events = tenantsEventsInsert(items.map((item) => ({ tenant: item.tenant, drafts: [...item.write.events, ...operationEvents(item.write.operations)] })));
  const operations = operationsInsert(items.map((item) => ({ tenant: item.tenant, operations: item.write.operations })));
  const jobs = items.flatMap((item) => item.write.jobs);
  const found = await rows<StoredObject>(db,
    `with ${methods.ctes},
     txn_in as (
       select *${audit ? `, ${ownAuditSql('transactions')} as own_audit` : ''}
         from unnest(?::text[], ?::text[], ?::text[], ?::text[], ${JSONB_LIST}, ${JSONB_LIST}, ${JSONB_LIST}, ?::text[], ?::text[], ?::text[], ${JSONB_LIST})
           as t(id, org_id, environment, type, data, funding, built, keys, actor, event_id, event)),
     txn as (
       insert into transactions (id, org_id, environment, type, data)
       select i.id, i.org_id, i.environment, i.type, ${FUNDED_DATA}
         from txn_in i cross join lateral (${FUNDING_LOOKUPS}) f
       returning ${ROW}),
     op as (${operations.sql}),
     event as (${events.sql}),
     timed as (
       select graphile_worker.add_job(task, payload, run_at => run_at, job_key => job_key, max_attempts => 25)
         from unnest(?::text[], ?::json[], ?::timestamptz[], ?::text[]) as j(task, payload, run_at, job_key))${audit ? `,
     audit as (${auditCreatedSql(`
         ${methods.audited}
         union all
         select 'transaction', 'transactions', i.id, i.org_id, i.environment, i.type, coalesce(i.data || i.funding, i.data), i.keys, i.actor, t.type, t.data,
                i.event_id, i.event, i.built
           from txn_in i join txn t using (id)`)})` : ''}
     -- the inserts run whether read or not; the jobs' select runs because it is read here
     -- an actor for the audit triggers, as this statement is its own transaction (a group's rows
     -- are audited by the audit part above, each with its own actor)
     select ${ROW.split(', ').map((column) => `txn.${column}`).join(', ')}, (select count(*) from timed) as jobs, ${AUDIT_SETTING_SQL} as actor
       from txn`,
    [
      ...methods.bindings,
      items.map((item) => item.write.transaction.id), items.map((item) => item.tenant.orgId), items.map((item) => item.tenant.environment),
      items.map((item) => item.write.transaction.type), jsonList(items.map((item) => JSON.stringify(item.write.transaction.data))),
      jsonList(items.map((item) => (audit && item.write.funding ? JSON.stringify(item.write.funding) : null))), jsonList(txnAudit.built), txnAudit.keys, items.map((item) => item.audit), txnAudit.eventIds, jsonList(txnAudit.events),
      ...operations.bindings,
      ...events.bindings,
      jobs.map((j) => j.task), jobs.map((j) => JSON.stringify(j.payload)), jobs.map((j) => j.runAt.toISOString()), jobs.map((j) => j.key ?? null),
      items[0].audit,
    ]);
  const byId = new Map(found.map((row) => {
    const { jobs: _jobs, actor: _actor, ...transaction } = row as StoredObject & Record<string, unknown>;
    return [transaction.id, transaction as StoredObject];
  }));
  return items.map((item) => byId.get(item.write.transaction.id)!);
}

/** One payment's statement, with the actor of the work under way. */
export async function insertPayment(db: Db, tenant: Tenant, write: PaymentWrite): Promise<StoredObject> {
  return (await insertPayments(db, [{ tenant, write, audit: currentAuditSetting() }]))[0];
}
