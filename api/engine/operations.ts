/**
 * The ten generic operations of spec §4.1 over any registered collection. Each runs inside the
 * transaction it is given: rows, family rules and outbox events commit together.
 */
import { currentAuditSetting } from '../db/auditContext.ts';
import { changesBetween, deleteAuditedRows, updateAuditedRows, type ChangedItem, type DeletedItem, type PlannedFromRead } from '../db/auditedChanges.ts';
import { insertAuditedRows, type CreatedItem } from '../db/auditedRows.ts';
import { auditRows } from '../db/auditStatement.ts';
import type { Db, Sql } from '../db/connection.ts';
import { recordEvents, type EventDraft } from '../db/events.ts';
import { groupCommit, groupWriterOf } from '../db/groupWriter.ts';
import * as objects from '../db/objects.ts';
import { ApiError, badRequest, invalidAttributes, notFound, type ErrorDetails } from '../errors.ts';
import { newId } from '../ids.ts';
import type { ListQuery, SelectTerm } from '../query/ast.ts';
import { AGGREGATES } from '../query/aggregates.ts';
import { category } from '../query/functions.ts';
import { SqlCompiler } from '../query/toSql.ts';
import type { Collection, CreateSteps, Family, PlannedItem, PlannedRow, PlannedWrites, RuleContext, StoredObject, Version } from './family.ts';
import { decidedOutside, ProcessorDecisions, voidingOnFailure } from '../processorDecisions.ts';
import { acceptedValues, toApi } from '../schema/values.ts';
import { applyValues, decodeInput, isKnownPath, isPlainObject, project, render, type Json } from './view.ts';

export interface OperationContext extends RuleContext {
  collection: Collection;
}

export type ApiList = { object: 'list'; values: Json[] } & Json;

const MAX_BATCH = 1000;

// ---------- reading ----------

export async function getOne(ctx: OperationContext, id: string, query: ListQuery): Promise<Json> {
  const { family, fixedType } = ctx.collection;
  const row = await objects.selectObjectById(ctx.tx, family.table, ctx.tenant, id, { type: fixedType });
  if (!row) throw notFound(`No ${family.name} with id ${id}`);
  return (await shape(ctx, [row], query.fields))[0];
}

export async function list(ctx: OperationContext, query: ListQuery): Promise<ApiList> {
  if (isAggregateQuery(query) || hasComputedFields(query)) return aggregate(ctx, query);
  const rows = await selectMatching(ctx, query, false);
  return { object: 'list', values: await shape(ctx, rows, query.fields) };
}

/** What a list selects: the client's filter and order within the tenant (and the collection's type). */
export function listSpec(ctx: OperationContext, query: ListQuery, limit = query.limit, forUpdate = false): objects.SelectSpec {
  const compiler = new SqlCompiler(ctx.collection.family, ctx.version);
  return {
    where: query.where ? compiler.where(query.where) : null,
    type: ctx.collection.fixedType,
    orderBy: query.orderBy.length || !ctx.collection.newestFirst ? orderSql(compiler, query) : [{ sql: 'created_at desc, id desc', bindings: [] }],
    limit,
    offset: query.offset,
    forUpdate,
  };
}

async function selectMatching(ctx: OperationContext, query: ListQuery, forUpdate: boolean): Promise<StoredObject[]> {
  return objects.selectObjects(ctx.tx, ctx.collection.family.table, ctx.tenant, listSpec(ctx, query, query.limit, forUpdate));
}

/** Columns every family table declares not null: ordering by them needs no nulls clause, so the tenant index serves `desc` too. */
const NOT_NULL_COLUMNS = new Set(['id', 'type', 'created_at', 'modified_at']);

function orderSql(compiler: SqlCompiler, query: ListQuery, allowAggregates = false): Sql[] {
  return query.orderBy.map((term) => {
    const operand = compiler.operand(term.expr, allowAggregates);
    const nulls = NOT_NULL_COLUMNS.has(operand.sql.replace(/"/g, '')) ? '' : ` nulls ${term.direction === 'asc' ? 'first' : 'last'}`;
    return { sql: `${operand.sql} ${term.direction}${nulls}`, bindings: operand.bindings };
  });
}

/** True when the answer is rows of aggregates/groups (CONTRACT §6); for transactions the reporting process answers. */
export function isAggregateQuery(query: ListQuery): boolean {
  if (query.groupBy.length) return true;
  return (query.fields ?? []).some((term) => term.expr?.kind === 'call' && AGGREGATES.has(term.expr.fn.toLowerCase()));
}

/** `fields=id,lower(name)`: scalar functions make the answer rows keyed by the expressions too. */
export function hasComputedFields(query: ListQuery): boolean {
  return (query.fields ?? []).some((term) => term.expr?.kind === 'call');
}

export type AggregateTerm = SelectTerm & { expr: NonNullable<SelectTerm['expr']> };

/** The terms an aggregate query returns, each grouped or aggregated (checked the same way for Postgres and ClickHouse). */
export function aggregateTerms(query: ListQuery): AggregateTerm[] {
  const terms = (query.fields ?? query.groupBy).filter((t): t is AggregateTerm => t.expr !== null);
  if (terms.length === 0) throw badRequest('An aggregate query needs fields', { fields: 'Name the fields and aggregates to return' });
  for (const group of query.groupBy) {
    if (group.expr?.kind === 'call' && AGGREGATES.has(group.expr.fn.toLowerCase())) {
      throw badRequest(`${group.source} cannot be grouped by`, { group_by: 'Group by fields or functions of fields, not aggregates' });
    }
  }
  if (!isAggregateQuery(query)) return terms;
  const groupSources = new Set(query.groupBy.map((g) => g.source));
  for (const term of terms) {
    const isAggregate = term.expr.kind === 'call' && AGGREGATES.has(term.expr.fn.toLowerCase());
    if (!isAggregate && !groupSources.has(term.source)) {
      throw badRequest(`${term.source} must be grouped or aggregated`, { [term.source]: 'Add it to group_by or wrap it in an aggregate' });
    }
  }
  return terms;
}

/**
 * `fields=status,sum(amount),count&group_by=status` → rows keyed by the expressions as requested.
 * The Postgres answer; transaction queries go to the reporting process instead (api/http/reportingProxy.ts),
 * which the agreement test holds to this one.
 */
export async function aggregate(ctx: OperationContext, query: ListQuery): Promise<ApiList> {
  const compiler = new SqlCompiler(ctx.collection.family, ctx.version);
  const terms = aggregateTerms(query);
  const compiled = terms.map((t) => compiler.term(t.expr, true));
  // Group and order by select-list position: the same expression bound twice would be two
  // different parameters to Postgres, and no longer "the same" grouped expression.
  const sources = terms.map((t) => t.source);
  const hidden = query.groupBy.filter((g) => g.expr && !sources.includes(g.source));
  const select = [...compiled.map(outputSql), ...hidden.map((g) => compiler.term(g.expr!, false))];
  const position = (source: string) => [...sources, ...hidden.map((g) => g.source)].indexOf(source) + 1;
  const rows = await objects.aggregateObjects(ctx.tx, ctx.collection.family.table, ctx.tenant, {
    select,
    where: query.where ? compiler.where(query.where) : null,
    type: ctx.collection.fixedType,
    groupBy: query.groupBy.filter((g) => g.expr).map((g) => ({ sql: String(position(g.source)), bindings: [] })),
    orderBy: [
      ...query.orderBy.map((term) => {
        const at = position(term.source.replace(/^(asc|desc)\((.*)\)$/, '$2'));
        if (at > 0) return { sql: `${at} ${term.direction} nulls ${term.direction === 'asc' ? 'first' : 'last'}`, bindings: [] };
        const operand = compiler.operand(term.expr, true);
        return { sql: `${operand.sql} ${term.direction}`, bindings: operand.bindings };
      }),
      // Then group order, as the reporting process answers: which groups a limit keeps is the same on both.
      ...query.groupBy.filter((g) => g.expr).map((g) => ({ sql: `${position(g.source)} asc nulls first`, bindings: [] })),
    ],
    limit: query.limit,
    offset: query.offset,
  });
  const values = rows.map((row) => {
    const out: Json = {};
    terms.forEach((term, i) => {
      out[term.source] = aggregateValue(compiled[i], row[`c${i}`], ctx.version);
    });
    return out;
  });
  return { object: 'list', values };
}

/** A date travels as its YYYY-MM-DD text: as a value it would come back a midnight in the process's time zone. */
function outputSql(typed: ReturnType<SqlCompiler['operand']>): Sql {
  return typed.type === 'date' ? { ...typed, sql: `to_char(${typed.sql}, 'YYYY-MM-DD')` } : typed;
}

/** A value in its API form, typed by what the expression yields: only numbers become numbers ("007" stays text). */
function aggregateValue(compiled: ReturnType<SqlCompiler['operand']>, raw: unknown, version: Version): unknown {
  if (raw === null || raw === undefined) return null;
  if (compiled.type === 'money') return Math.round(Number(raw)) / 100;
  // Postgres hands numeric and bigint values back as text.
  const value = category(compiled.type) === 'number' && typeof raw === 'string' ? Number(raw) : raw;
  if (compiled.field && compiled.type !== 'aggregate') return toApi(compiled.field, version, value);
  if (value instanceof Date) return toApi({ store: '', type: 'datetime' }, version, value);
  return value;
}

/** Renders rows for the version and applies `fields` (projection and non-default inclusion). */
export async function shape(ctx: OperationContext, rows: StoredObject[], fields: SelectTerm[] | null): Promise<Json[]> {
  const { family } = ctx.collection;
  const named = (fields ?? []).filter((f) => f.expr?.kind === 'field').map((f) => (f.expr as { path: string[] }).path.join('.'));
  const include = new Set(named);
  await family.rules?.load?.(ctx, rows, include);
  const renderRow = (row: StoredObject) => ({ ...render(family, ctx.version, row, { include }), ...ctx.revealed?.get(row.id) });
  if (!fields) return rows.map(renderRow);
  const star = fields.some((f) => f.expr === null);
  for (const path of named) {
    if (path !== 'object' && !isKnownPath(family, ctx.version, path)) throw invalidAttributes({ [path]: 'Unknown field' });
  }
  return rows.map((row) => {
    const rendered = renderRow(row);
    return star ? rendered : project(rendered, named);
  });
}

// ---------- writing ----------

async function afterWrite(ctx: OperationContext, changes: Array<[StoredObject, StoredObject | null]>): Promise<void> {
  const hook = ctx.collection.family.rules?.afterWrite;
  if (!hook) return;
  for (const [next, previous] of changes) await hook(ctx, next, previous);
}

async function emit(ctx: OperationContext, changes: Array<[StoredObject | null, StoredObject | null]>): Promise<void> {
  const eventsOf = ctx.collection.family.rules?.events;
  if (!eventsOf) return;
  const drafts: EventDraft[] = changes.flatMap(([next, previous]) => eventsOf(ctx, next, previous));
  await recordEvents(ctx.tx, ctx.tenant, drafts);
}

function typeForCreate(ctx: OperationContext, body: Json): string {
  const { family, fixedType } = ctx.collection;
  const typeField = family.fields.find((f) => f.store === 'type');
  const raw = body.type;
  if (typeField?.enum && typeof raw === 'string' && !acceptedValues(typeField, ctx.version).includes(raw)) {
    throw invalidAttributes({ type: `Must be one of: ${acceptedValues(typeField, ctx.version).join(', ')}` });
  }
  const requested = typeof raw === 'string' ? (typeField?.values?.[ctx.version]?.[raw] ?? raw) : raw;
  if (fixedType) {
    if (requested !== undefined && requested !== fixedType) throw invalidAttributes({ type: `Must be ${fixedType}` });
    return fixedType;
  }
  if (requested === undefined && family.createType) return family.createType;
  if (family.types.length === 1 && requested === undefined) return family.types[0];
  if (typeof requested !== 'string' || !family.types.includes(requested)) {
    throw invalidAttributes({ type: requested === undefined ? 'Required' : `Must be one of: ${family.types.join(', ')}` });
  }
  return requested;
}

/** What a create is given: a client's body (`extra` sets stored values its version has no field for), or values typed as stored. */
export type CreateInput = { body: unknown; extra?: Map<string, unknown> } | { type: string; values: Record<string, unknown> };

/**
 * A new row from a create body, before the family's rules: type, decoded fields, a fresh id.
 * `created_at` is the domain clock's until the database stamps the stored row.
 */
function decodeCreate(ctx: OperationContext, input: CreateInput): StoredObject {
  if ('values' in input) {
    if (!ctx.collection.family.types.includes(input.type)) throw new Error(`${ctx.collection.family.name} has no type ${input.type}`);
    return decodeTyped(ctx, input.type, {}, new Map(Object.entries(input.values)));
  }
  if (!isPlainObject(input.body)) throw invalidAttributes({ body: 'Must be an object' });
  return decodeTyped(ctx, typeForCreate(ctx, input.body), input.body, input.extra);
}

/** `decodeCreate` for a type already stored-named (`withdraw`, never v1's `reversal`). */
function decodeTyped(ctx: OperationContext, type: string, body: Json, extra?: Map<string, unknown>): StoredObject {
  const { values } = decodeInput(ctx.collection.family, ctx.version, type, body, 'create', extra);
  const now = ctx.domain.now();
  const blank: StoredObject = { id: newId(ctx.collection.family.idPrefix), type, created_at: now, modified_at: now, data: {} };
  const row = applyValues(blank, values);
  row.type = type;
  return row;
}

/** The family's prepare and validate on a decoded new row. */
async function completeCreate(ctx: OperationContext, decoded: StoredObject): Promise<StoredObject> {
  let row = decoded;
  const rules = ctx.collection.family.rules;
  if (rules?.prepare) row = await rules.prepare(ctx, row, null);
  await rules?.validate?.(ctx, row, null);
  return row;
}

/** Runs `prepare` on every item, collecting failures into one all-or-nothing list error. */
async function prepareAll<T, R>(items: T[], prepare: (item: T) => Promise<R>): Promise<R[]> {
  if (items.length === 0) throw invalidAttributes({ values: 'Must not be empty' });
  if (items.length > MAX_BATCH) throw invalidAttributes({ values: `At most ${MAX_BATCH} objects per request` });
  const results: R[] = [];
  const failures: ErrorDetails[] = [];
  let failed = false;
  for (const item of items) {
    try {
      results.push(await prepare(item));
      failures.push({});
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 400) throw error;
      failed = true;
      failures.push(error.details ?? { error: error.message });
    }
  }
  if (failed) throw invalidAttributes({ object: 'list', values: failures });
  return results;
}

/** How a create is answered, and where. */
export interface CreateOptions<T> {
  /** a list body: each item's refusal is reported at its index, and none is written */
  many?: boolean;
  /** Renders (and stores) the answer; it joins the write's statement or transaction when `inWrite`. */
  answer: (ctx: OperationContext, created: StoredObject[]) => Promise<T>;
  /** the answer reads or stores and must commit with the write (`fields` asks for related rows, an idempotent response) */
  inWrite?: boolean;
  /** the create may commit only on the processor's real answers (ctx.decisions); false for a create nested in another that settles them */
  settles?: boolean;
}

/**
 * The one create door: every create of a stored object passes here, whoever makes it (a request,
 * a family's rule making a dependent object, a worker acting as `system`).
 *
 *   1. decode — each input into a row of the family: its type, decoded fields, a fresh id;
 *   2. plan   — the family's rules complete the row, reading and asking only. A family that
 *               plans on the pool (`rules.createSteps`) plans a single create there, outside any
 *               transaction, asking the processor as it goes; otherwise prepare and validate run
 *               inside the write's transaction, putting their writes off to step 3 (`atWrite`,
 *               `createNestedAtWrite`), and the cards they charge are decided outside it: a plan
 *               with a question unanswered stops before writing, rolls back, and runs again on the
 *               processor's answers (`decidedOutside`);
 *   3. write  — one statement, shared with creates of the same kind arriving meanwhile when it
 *               commits on its own (group commit), or one transaction's writes, after the plan;
 *   4. audit and events — from that same write (the statement's audit part and events, or the
 *               family's afterWrite and events in the transaction), then the caller's answer.
 *
 * On the pool it opens the write itself; in a caller's transaction (a nested or worker create) the
 * write joins it. Whatever fails after the processor approved a card voids the approval.
 */
export async function createObjects<T>(ctx: OperationContext, inputs: CreateInput[], options: CreateOptions<T>): Promise<T> {
  const steps = ctx.collection.family.rules?.createSteps;
  if (steps && !options.many && !ctx.tx.inTransaction) {
    const decisions = new ProcessorDecisions(ctx.domain.processor, { direct: true });
    const onPool: OperationContext = { ...ctx, decisions };
    const row = decodeCreate(onPool, inputs[0]);
    const planned = await voidingOnFailure(decisions, () => steps.plan(onPool, row));
    if (planned !== null) return writePlanned(onPool, steps, planned, options);
  }
  if (ctx.tx.inTransaction) return planAndWrite(ctx, inputs, options);
  // The door's own transaction commits only on the processor's real answers, whoever called it.
  const decisions = new ProcessorDecisions(ctx.domain.processor);
  return decidedOutside(decisions, () => ctx.tx.transaction((tx) => planAndWrite({ ...ctx, tx, decisions }, inputs, { ...options, settles: true })));
}

/** Steps 2–4 in one transaction: the family's rules, then the write (the insert, afterWrite, events), the answer. */
async function planAndWrite<T>(ctx: OperationContext, inputs: CreateInput[], options: CreateOptions<T>): Promise<T> {
  const planned = await planCreate(ctx, inputs, options.many ?? false);
  const inserted = await writeCreate(planned);
  if (options.settles !== false) planned.ctx.decisions?.settle();
  return options.answer(planned.ctx, inserted);
}

/** A create planned in a transaction: its completed rows, and the writes its rules put off to the write step. */
interface PlannedCreate {
  ctx: OperationContext;
  rows: StoredObject[];
  writes: PlannedWrites;
}

/** Step 2 in a transaction: the family's rules complete each row, reading (and asking) only; their writes wait for step 3. */
async function planCreate(ctx: OperationContext, inputs: CreateInput[], many: boolean): Promise<PlannedCreate> {
  const writes: PlannedWrites = { open: true, writes: [] };
  const planning: OperationContext = { ...ctx, plannedWrites: writes };
  const plan = (input: CreateInput) => completeCreate(planning, decodeCreate(planning, input));
  const rows = many ? await prepareAll(inputs, plan) : [await plan(inputs[0])];
  return { ctx: planning, rows, writes };
}

/**
 * Step 3 in a transaction, once every card the plan charges is decided (else it refuses before
 * writing anything): the writes the rules put off, the insert, afterWrite and events.
 */
async function writeCreate({ ctx, rows, writes }: PlannedCreate): Promise<StoredObject[]> {
  ctx.decisions?.beforeWrite();
  writes.open = false;
  for (const write of writes.writes) await write();
  const inserted = await objects.insertObjects(ctx.tx, ctx.collection.family.table, ctx.tenant, rows);
  await afterWrite(ctx, inserted.map((row) => [row, null]));
  await emit(ctx, inserted.map((row) => [row, null]));
  return inserted;
}

/**
 * Runs a write a create's rules make while planning (a client token's use) at the door's write
 * step, after the processor has answered every card of the create; outside a plan, at once.
 */
export async function atWrite(ctx: RuleContext, write: () => Promise<unknown>): Promise<void> {
  if (ctx.plannedWrites?.open) ctx.plannedWrites.writes.push(write);
  else {
    ctx.decisions?.beforeWrite();
    await write();
  }
}

/**
 * Steps 3–4 for a plan made on the pool: the family's one statement (by default the planned row
 * with its audit event), alone — grouped with others of its kind — or in a transaction with the answer.
 */
async function writePlanned<T>(ctx: OperationContext, steps: CreateSteps<unknown>, planned: unknown, options: CreateOptions<T>): Promise<T> {
  const { family } = ctx.collection;
  const statement = steps.statement ?? ((db: Db, items: PlannedItem<unknown>[]) => oneRowStatement(db, family, items as PlannedItem<PlannedRow>[]));
  const item: PlannedItem<unknown> = { tenant: ctx.tenant, plan: planned, audit: currentAuditSetting() };
  const store = async (op: OperationContext) => {
    // Creates that commit on their own and arrive together share one statement (group commit),
    // which audits each row with its own request's actor; without that, one statement each.
    const db = op.tx;
    const [created] = writesGrouped(db)
      ? [await groupWriterOf(db, `create:${family.table}`, (items: PlannedItem<unknown>[]) => statement(db, items)).write(item)]
      : await statement(db, [item]);
    (ctx.createdNow ??= new Set()).add(created.id);
    return created;
  };
  const decisions = ctx.decisions!;
  if (!options.inWrite) {
    const created = await voidingOnFailure(decisions, () => store(ctx));
    return options.answer(ctx, [created]);
  }
  return voidingOnFailure(decisions, () => ctx.tx.transaction(async (tx) => {
    const op = { ...ctx, tx };
    return options.answer(op, [await store(op)]);
  }));
}

/** Whether a create committing on `db` shares a statement with others of its kind (and audits in it). */
function writesGrouped(db: Db): boolean {
  return groupCommit.enabled && !db.inTransaction && auditRows.inStatement;
}

/**
 * A one-row plan's statement: the row and its events and, in a group, each row's audit event with
 * its own actor. Ungrouped, it is written in a transaction (the answer's): the row, then its events.
 */
async function oneRowStatement(db: Db, family: Family, items: PlannedItem<PlannedRow>[]): Promise<StoredObject[]> {
  const created = items.map((item): CreatedItem => ({ tenant: item.tenant, row: item.plan.row, audit: item.audit, events: item.plan.events }));
  if (items.length > 1 || writesGrouped(db)) return insertAuditedRows(db, family.table, family.name, created);
  const inserted = await objects.insertObjects(db, family.table, items[0].tenant, [created[0].row]);
  await recordEvents(db, items[0].tenant, items[0].plan.events);
  return inserted;
}

/**
 * Creates an object of another family inside the current change (a processing account's nested
 * payment methods, a billing run's invoice) through the door, in the caller's transaction.
 * `extra` sets stored values the client's version has no field for.
 */
export async function createNested(ctx: RuleContext, family: Family, body: unknown, extra?: Map<string, unknown>): Promise<StoredObject> {
  const op: OperationContext = { ...ctx, collection: { path: family.table, family } };
  return createObjects(op, [{ body, extra }], { answer: async (_, [row]) => row, settles: false });
}

/**
 * `createNested` for an object the caller's plan needs before its processor is answered (a method
 * typed into a payment): its family's rules complete it now, reading only, and it is written (with
 * its afterWrite and events) at the caller's write step, before the caller's rows. The planned row
 * is returned; outside a plan it is created at once.
 */
export async function createNestedAtWrite(ctx: RuleContext, family: Family, body: unknown): Promise<StoredObject> {
  const outer = ctx.plannedWrites;
  if (!outer?.open) return createNested(ctx, family, body);
  const planned = await planCreate({ ...ctx, collection: { path: family.table, family } }, [{ body }], false);
  outer.writes.push(() => writeCreate(planned));
  return planned.rows[0];
}

/**
 * Creates an object the service makes on its own (an automatic payment) from stored values, typed
 * as stored (money in minor units), never an API body, through the door in the caller's
 * transaction. A card it charges is decided outside that transaction: the caller runs it under
 * `decidedOutside` with `ctx.decisions`.
 */
export async function createFromValues(ctx: RuleContext, family: Family, type: string, values: Record<string, unknown>): Promise<StoredObject> {
  const op: OperationContext = { ...ctx, collection: { path: family.table, family } };
  return createObjects(op, [{ type, values }], { answer: async (_, [row]) => row });
}

/**
 * Steps 1–2 of the door for a row another family's statement writes with its own (a payment's
 * inline method): decoded, prepared and validated by its family's rules, with the events its
 * creation causes. The family declines when its create needs an afterWrite (the caller checks).
 */
export async function planNested(ctx: RuleContext, family: Family, body: unknown): Promise<{ row: StoredObject; events: EventDraft[] }> {
  const op: OperationContext = { ...ctx, collection: { path: family.table, family } };
  const row = await completeCreate(op, decodeCreate(op, { body }));
  return { row, events: family.rules?.events?.(op, row, null) ?? [] };
}

/**
 * Create steps for a family whose create, for the rows `plain` accepts, writes that one row and
 * its events and nothing else (no afterWrite work): its rules run on the pool and the door's
 * one-row statement stores the row with the events its creation causes. `plain` sees the decoded
 * row before the family's rules, so a rule that would write (an inline entity) never runs outside
 * a transaction. A create with events whose statement would not write them (no group commit, or
 * audit left to the triggers: the row then goes alone) runs in a transaction.
 */
export function rulesOnPool(plain: (row: StoredObject) => boolean): CreateSteps<PlannedRow> {
  return {
    async plan(ctx, decoded) {
      if (!plain(decoded)) return null;
      const row = await completeCreate(ctx, decoded);
      const events = ctx.collection.family.rules?.events?.(ctx, row, null) ?? [];
      if (events.length && !writesGrouped(ctx.tx)) return null;
      return { row, events };
    },
  };
}

/** A write's answer: the rendered body, and the error it is answered as although it committed (a stored decline). */
export interface WriteAnswer {
  body: Json;
  error: Error | null;
}

/** The first created row the family answers as an error makes the whole answer that error. */
export function answerOf(ctx: OperationContext, created: StoredObject[], body: Json): WriteAnswer {
  const asError = ctx.collection.family.rules?.answerAsError;
  const refusal = asError ? created.map(asError).find((build) => build !== undefined) : undefined;
  return { body, error: refusal ? refusal(body) : null };
}

/** A request's create (`POST /c`, one object or a list) through the door, answered with the rendered rows. */
export async function create(ctx: OperationContext, body: Json, query: ListQuery, store?: (ctx: OperationContext, answer: WriteAnswer) => Promise<void>): Promise<WriteAnswer> {
  const many = body.object === 'list';
  if (many && !Array.isArray(body.values)) throw invalidAttributes({ values: 'Must be a list' });
  const inputs = many ? (body.values as unknown[]).map((item) => ({ body: item })) : [{ body }];
  return createObjects(ctx, inputs, {
    many,
    inWrite: store !== undefined || query.fields !== null,
    answer: async (op, created) => {
      const shaped = await shape(op, created, query.fields);
      const answered = answerOf(op, created, many ? { object: 'list', values: shaped } : shaped[0]);
      await store?.(op, answered);
      return answered;
    },
  });
}

// ---------- changing and deleting ----------

/**
 * Changes a stored row of a family on the service's own behalf (a worker's decision, a secret's
 * rotation) through the update door, as a client's update of it: decode, prepare, validate,
 * write, afterWrite and events, in the caller's transaction, which holds the row's lock. `extra`
 * sets stored values the client's version has no field for, for the family's rules to read.
 */
export async function updateNested(ctx: RuleContext, family: Family, row: StoredObject, body: Json, extra?: Map<string, unknown>): Promise<StoredObject> {
  ctx.decisions?.beforeWrite();
  const op: OperationContext = { ...ctx, collection: { path: family.table, family } };
  const [updated] = await changeRows(op, [[row, body]], extra);
  return updated;
}

/**
 * `updateNested` for many rows the caller holds locked, each given the same stored values (a
 * worker's step over many objects: the funding run's funding_status): decoded and planned by the
 * family's rules row by row, and written by the door's one statement per MAX_BATCH rows, each row
 * with its audit event; then afterWrite and events, in the caller's transaction.
 */
export async function updateNestedAll(ctx: RuleContext, family: Family, rows: StoredObject[], extra: Map<string, unknown>): Promise<StoredObject[]> {
  if (rows.length === 0) return [];
  ctx.decisions?.beforeWrite();
  const op: OperationContext = { ...ctx, collection: { path: family.table, family } };
  const updated: StoredObject[] = [];
  for (let at = 0; at < rows.length; at += MAX_BATCH) {
    updated.push(...await changeRows(op, rows.slice(at, at + MAX_BATCH).map((row): [StoredObject, Json] => [row, {}]), extra));
  }
  return updated;
}

/**
 * Deletes stored rows of a family that go with another object (an entity's stakeholders) through
 * the delete door, as a client's delete of them, in the caller's transaction.
 */
export async function deleteNested(ctx: RuleContext, family: Family, rows: StoredObject[]): Promise<void> {
  if (rows.length > 0) await deleteRows({ ...ctx, collection: { path: family.table, family } }, rows);
}

/**
 * The one delete door: the family's beforeDelete, one statement deleting the rows with their
 * audit events (api/db/auditedChanges.ts), then their events, in the transaction it is given,
 * which holds the rows' locks.
 */
async function deleteRows(ctx: OperationContext, rows: StoredObject[]): Promise<void> {
  const { family } = ctx.collection;
  await family.rules?.beforeDelete?.(ctx, rows);
  const audit = currentAuditSetting();
  const deleted = await deleteAuditedRows(ctx.tx, family.table, family.name, rows.map((row) => ({ tenant: ctx.tenant, id: row.id, audit })));
  if (deleted.some((row) => row === null)) throw new Error(`${family.name}: a row to delete is not the tenant's`);
  await emit(ctx, rows.map((row) => [null, row]));
}

function decodeUpdate(ctx: OperationContext, row: StoredObject, body: Json, extra?: Map<string, unknown>): StoredObject {
  const { values } = decodeInput(ctx.collection.family, ctx.version, row.type, body, 'update', extra);
  return applyValues(row, values);
}

/** The family's prepare and validate on a change decoded onto the row it replaces. */
async function completeChange(ctx: OperationContext, decoded: StoredObject, previous: StoredObject): Promise<StoredObject> {
  const rules = ctx.collection.family.rules;
  const next = rules?.prepare ? await rules.prepare(ctx, decoded, previous) : decoded;
  await rules?.validate?.(ctx, next, previous);
  return next;
}

/** Runs `work` with the rows of `ids` marked as changing through the door (`RuleContext.changing`). */
async function whileChanging<T>(ctx: OperationContext, ids: string[], work: () => Promise<T>): Promise<T> {
  const changing = (ctx.changing ??= new Set());
  const marked = ids.filter((id) => !changing.has(id));
  for (const id of marked) changing.add(id);
  try {
    return await work();
  } finally {
    for (const id of marked) changing.delete(id);
  }
}

/**
 * The one update door, in the transaction it is given (the caller's, which holds the rows' locks):
 *
 *   1. decode — each body onto the row it replaces;
 *   2. plan   — the family's prepare and validate, the rows marked as changing;
 *   3. write  — one statement storing every changed row with its audit event
 *               (api/db/auditedChanges.ts);
 *   4. afterWrite and events, in the same transaction.
 *
 * A single change of a request may instead be planned on the pool and written alone (`update`).
 */
async function changeRows(ctx: OperationContext, pairs: Array<[StoredObject, Json]>, extra?: Map<string, unknown>): Promise<StoredObject[]> {
  const { family } = ctx.collection;
  return whileChanging(ctx, pairs.map(([row]) => row.id), async () => {
    const nextRows = await prepareAll(pairs, ([row, body]) => completeChange(ctx, decodeUpdate(ctx, row, body, extra), row));
    const stored = await updateAuditedRows(ctx.tx, family.table, family.name, nextRows.map((next, i) => changeOf(ctx, pairs[i][0], next)));
    const updated = stored.map((row) => {
      if (!row) throw new Error(`${family.name}: a row to change is not the tenant's`);
      return row;
    });
    const changes = updated.map((next, i): [StoredObject, StoredObject] => [next, pairs[i][0]]);
    await afterWrite(ctx, changes);
    await emit(ctx, changes);
    return updated;
  });
}

/** What the door's statement writes for a change of `previous` into `next`: what it sets and removes, field by field. */
function changeOf(ctx: OperationContext, previous: StoredObject, next: StoredObject): ChangedItem {
  return { tenant: ctx.tenant, id: previous.id, changes: changesBetween(previous.data, next.data), audit: currentAuditSetting() };
}

/** A change planned on the pool that the family's rules, or the row as the statement finds it, leave to a transaction. */
const DECLINED = Symbol('declined');

/** Whether a single change or delete of a request may be planned on the pool: its answer needs nothing from its write (no `fields`, no idempotent response). */
function onPool(ctx: OperationContext, query: ListQuery, store: unknown): boolean {
  return store === undefined && query.fields === null && !ctx.tx.inTransaction;
}

/**
 * What a change or delete planned on the pool from `row` (read without its lock) writes besides
 * it: the events it causes, which its statement writes only while the row is still as read.
 */
function plannedFromRead(ctx: OperationContext, next: StoredObject | null, row: StoredObject): PlannedFromRead | undefined {
  const events = ctx.collection.family.rules?.events?.(ctx, next, row) ?? [];
  return events.length ? { events, expected: row.data } : undefined;
}

/**
 * `PUT /c/{id}` through the update door. A plain change (`rules.plainChange`) whose answer needs
 * nothing from its write is planned on the pool from the row as read, and written by one statement
 * with its audit event and its events, grouped with changes arriving meanwhile (group commit); the
 * statement applies it, field by field, to the row as it finds it under its lock, so a change that
 * landed in between stands. A change that causes events is written only if the row is still as
 * read (its events were drafted from it), else it runs again in a transaction. Any other change
 * runs in one transaction that locks the row first, with the idempotent response.
 */
export async function update(ctx: OperationContext, id: string, body: Json, query: ListQuery, store?: (ctx: OperationContext, answer: WriteAnswer) => Promise<void>): Promise<WriteAnswer> {
  if (onPool(ctx, query, store) && ctx.collection.family.rules?.plainChange) {
    const changed = await changeOnPool(ctx, id, body);
    if (changed !== DECLINED) return { body: (await shape(ctx, [changed], null))[0], error: null };
  }
  return ctx.tx.transaction(async (tx) => {
    const op = { ...ctx, tx };
    const answered = { body: await updateOne(op, id, body, query), error: null };
    await store?.(op, answered);
    return answered;
  });
}

/**
 * Steps 1–4 of a single change on the pool: the stored row, or DECLINED for a change the family's
 * rules run in a transaction, or whose row the statement did not find as read (changed or deleted
 * meanwhile: the transaction answers either).
 */
async function changeOnPool(ctx: OperationContext, id: string, body: Json): Promise<StoredObject | typeof DECLINED> {
  const { family, fixedType } = ctx.collection;
  const row = await objects.selectObjectById(ctx.tx, family.table, ctx.tenant, id, { type: fixedType });
  if (!row) throw notFound(`No ${family.name} with id ${id}`);
  const decoded = decodeUpdate(ctx, row, body);
  if (decoded.type !== row.type || !family.rules?.plainChange?.(decoded, row)) return DECLINED;
  const next = await whileChanging(ctx, [id], () => completeChange(ctx, decoded, row));
  const item: ChangedItem = { ...changeOf(ctx, row, next), read: plannedFromRead(ctx, next, row) };
  // Changes that commit on their own and arrive together share one statement (group commit).
  const db = ctx.tx;
  const [stored] = writesGrouped(db)
    ? [await groupWriterOf(db, `update:${family.table}`, (items: ChangedItem[]) => updateAuditedRows(db, family.table, family.name, items)).write(item)]
    : await updateAuditedRows(db, family.table, family.name, [item]);
  return stored ?? DECLINED;
}

/** A single change in the transaction it is given, its row locked first. */
async function updateOne(ctx: OperationContext, id: string, body: Json, query: ListQuery): Promise<Json> {
  const { family, fixedType } = ctx.collection;
  const row = await objects.selectObjectById(ctx.tx, family.table, ctx.tenant, id, { type: fixedType, forUpdate: true });
  if (!row) throw notFound(`No ${family.name} with id ${id}`);
  try {
    const [updated] = await changeRows(ctx, [[row, body]]);
    return (await shape(ctx, [updated], query.fields))[0];
  } catch (error) {
    // A single update reports its fields directly, not as a one-item list.
    if (error instanceof ApiError && isPlainObject(error.details) && error.details.object === 'list') {
      throw invalidAttributes((error.details.values as ErrorDetails[])[0]);
    }
    throw error;
  }
}

/** `PUT /c` with `{object: 'list', values: [{id, …}]}`. */
export async function updateMany(ctx: OperationContext, values: unknown[], query: ListQuery): Promise<ApiList> {
  const ids = values.map((v) => (isPlainObject(v) && typeof v.id === 'string' ? v.id : null));
  const rows = await lockRows(ctx, ids);
  const pairs = values.map((v, i): [StoredObject, Json] => {
    const { id: _id, ...changes } = v as Json;
    return [rows.get(ids[i]!)!, changes];
  });
  const updated = await changeRows(ctx, pairs);
  return { object: 'list', values: await shape(ctx, updated, query.fields) };
}

async function lockRows(ctx: OperationContext, ids: Array<string | null>): Promise<Map<string, StoredObject>> {
  const { family, fixedType } = ctx.collection;
  if (ids.length === 0) throw invalidAttributes({ values: 'Must not be empty' });
  if (ids.length > MAX_BATCH) throw invalidAttributes({ values: `At most ${MAX_BATCH} objects per request` });
  const locked = await objects.lockObjectsByIds(ctx.tx, family.table, ctx.tenant, ids.filter((id): id is string => id !== null), fixedType);
  const rows = new Map(locked.map((r) => [r.id, r]));
  // One change per object per request: a repeated id would apply (and announce) two changes to one row.
  const seen = new Set<string>();
  const failures = ids.map((id): ErrorDetails => {
    if (id === null) return { id: 'Required' };
    if (seen.has(id)) return { id: 'Named more than once in this request' };
    seen.add(id);
    return rows.has(id) ? {} : { id: 'Not found' };
  });
  if (failures.some((f) => Object.keys(f).length)) throw invalidAttributes({ object: 'list', values: failures });
  return rows;
}

/** `PUT /c?<filters>&mode=query` with the changes as the body. */
export async function updateByQuery(ctx: OperationContext, query: ListQuery, body: Json): Promise<ApiList> {
  const rows = await selectMatching(ctx, query, true);
  if (rows.length === 0) return { object: 'list', values: [] };
  const updated = await changeRows(ctx, rows.map((row): [StoredObject, Json] => [row, body]));
  return { object: 'list', values: await shape(ctx, updated, query.fields) };
}

async function removeRows(ctx: OperationContext, rows: StoredObject[], query: ListQuery): Promise<Json[]> {
  const rendered = await shape(ctx, rows, query.fields);
  await deleteRows(ctx, rows);
  return rendered;
}

/**
 * `DELETE /c/{id}` through the delete door. A plain delete (`rules.plainDelete`) whose answer needs
 * nothing from its write is planned on the pool from the row as read (the family's beforeDelete,
 * the answer rendered) and written by one statement that deletes the row only if it is still as
 * read, with its audit event and its events, grouped with deletes arriving meanwhile (group
 * commit); a row changed or deleted meanwhile is deleted (or answered not found) in a transaction
 * instead. Any other delete runs in one transaction that locks the row first, with the idempotent response.
 */
export async function deleteById(ctx: OperationContext, id: string, query: ListQuery, store?: (ctx: OperationContext, answer: WriteAnswer) => Promise<void>): Promise<WriteAnswer> {
  if (onPool(ctx, query, store) && ctx.collection.family.rules?.plainDelete) {
    const deleted = await deleteOnPool(ctx, id);
    if (deleted !== DECLINED) return { body: deleted, error: null };
  }
  return ctx.tx.transaction(async (tx) => {
    const op = { ...ctx, tx };
    const answered = { body: await deleteOne(op, id, query), error: null };
    await store?.(op, answered);
    return answered;
  });
}

/** A single delete on the pool: the rendered row, or DECLINED for one the family's rules, or the row as the statement finds it, leave to a transaction. */
async function deleteOnPool(ctx: OperationContext, id: string): Promise<Json | typeof DECLINED> {
  const { family, fixedType } = ctx.collection;
  const row = await objects.selectObjectById(ctx.tx, family.table, ctx.tenant, id, { type: fixedType });
  if (!row) throw notFound(`No ${family.name} with id ${id}`);
  if (!family.rules?.plainDelete?.(row)) return DECLINED;
  // Unlike a change, a delete always waits for its row as read: its answer is rendered from it
  // (taken before rendering, whose `load` may add derived parts to the row).
  const item: DeletedItem = { tenant: ctx.tenant, id, audit: currentAuditSetting(), read: plannedFromRead(ctx, null, row) ?? { events: [], expected: row.data } };
  await family.rules.beforeDelete?.(ctx, [row]);
  const [rendered] = await shape(ctx, [row], null);
  const db = ctx.tx;
  const [deleted] = writesGrouped(db)
    ? [await groupWriterOf(db, `delete:${family.table}`, (items: DeletedItem[]) => deleteAuditedRows(db, family.table, family.name, items)).write(item)]
    : await deleteAuditedRows(db, family.table, family.name, [item]);
  return deleted ? rendered : DECLINED;
}

/** A single delete in the transaction it is given, its row locked first. */
async function deleteOne(ctx: OperationContext, id: string, query: ListQuery): Promise<Json> {
  const { family, fixedType } = ctx.collection;
  const row = await objects.selectObjectById(ctx.tx, family.table, ctx.tenant, id, { type: fixedType, forUpdate: true });
  if (!row) throw notFound(`No ${family.name} with id ${id}`);
  return (await removeRows(ctx, [row], query))[0];
}

/** `DELETE /c` with `{object: 'list', values: [{id}]}`. */
export async function deleteMany(ctx: OperationContext, values: unknown[], query: ListQuery): Promise<ApiList> {
  const ids = values.map((v) => (isPlainObject(v) && typeof v.id === 'string' ? v.id : null));
  const rows = await lockRows(ctx, ids);
  return { object: 'list', values: await removeRows(ctx, [...rows.values()], query) };
}

/** `DELETE /c?<filters>&mode=query` (also `?id=a|b&mode=query`). */
export async function deleteByQuery(ctx: OperationContext, query: ListQuery): Promise<ApiList> {
  const rows = await selectMatching(ctx, query, true);
  if (rows.length === 0) return { object: 'list', values: [] };
  return { object: 'list', values: await removeRows(ctx, rows, query) };
}
