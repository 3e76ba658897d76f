/**
 * The ten generic operations of spec §4.1 over any registered collection. Each runs inside the
 * transaction it is given: rows, family rules and outbox events commit together.
 */
import { currentAuditSetting } from '../db/auditContext.ts';
import { insertAuditedRows, type CreatedItem } from '../db/auditedRows.ts';
import { auditRows } from '../db/auditStatement.ts';
import type { Sql } from '../db/connection.ts';
import { recordEvents, type EventDraft } from '../db/events.ts';
import { groupCommit, groupWriterOf } from '../db/groupWriter.ts';
import * as objects from '../db/objects.ts';
import { ApiError, badRequest, invalidAttributes, notFound, type ErrorDetails } from '../errors.ts';
import { newId } from '../ids.ts';
import type { ListQuery, SelectTerm } from '../query/ast.ts';
import { AGGREGATES } from '../query/aggregates.ts';
import { category } from '../query/functions.ts';
import { SqlCompiler } from '../query/toSql.ts';
import type { Collection, CreateSteps, Family, RuleContext, StoredObject, Version } from './family.ts';
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

/**
 * A new row from a create body, before the family's rules: type, decoded fields, a fresh id.
 * `created_at` is the domain clock's until the database stamps the stored row.
 */
export function decodeCreate(ctx: OperationContext, body: unknown, extra?: Map<string, unknown>): StoredObject {
  if (!isPlainObject(body)) throw invalidAttributes({ body: 'Must be an object' });
  return decodeTyped(ctx, typeForCreate(ctx, body), body, extra);
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

async function prepareCreate(ctx: OperationContext, body: unknown, extra?: Map<string, unknown>): Promise<StoredObject> {
  return completeCreate(ctx, decodeCreate(ctx, body, extra));
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

/**
 * Creates an object of another family inside the current request (a processing account's nested
 * payment methods) through the same pipeline as a create of its own: decode, prepare, validate,
 * insert, afterWrite and events, all in the caller's transaction. `extra` sets stored values the
 * client's version has no field for.
 */
export async function createNested(ctx: RuleContext, family: Family, body: unknown, extra?: Map<string, unknown>): Promise<StoredObject> {
  const op: OperationContext = { ...ctx, collection: { path: family.table, family } };
  return writeCreated(op, await prepareCreate(op, body, extra));
}

/**
 * Creates an object the service makes on its own (an automatic payment) from stored values, typed
 * as stored (money in minor units), never an API body: decoded with the family's defaults, then
 * the same prepare, validate, insert, afterWrite and events as any create, in the caller's
 * transaction. A card it charges is decided outside that transaction: the caller runs it under
 * `decidedOutside` with `ctx.decisions`.
 */
export async function createFromValues(ctx: RuleContext, family: Family, type: string, values: Record<string, unknown>): Promise<StoredObject> {
  const op: OperationContext = { ...ctx, collection: { path: family.table, family } };
  if (!family.types.includes(type)) throw new Error(`${family.name} has no type ${type}`);
  const decoded = decodeTyped(op, type, {}, new Map(Object.entries(values)));
  const created = await writeCreated(op, await completeCreate(op, decoded));
  ctx.decisions?.settle();
  return created;
}

async function writeCreated(op: OperationContext, row: StoredObject): Promise<StoredObject> {
  const [inserted] = await objects.insertObjects(op.tx, op.collection.family.table, op.tenant, [row]);
  await afterWrite(op, [[inserted, null]]);
  await emit(op, [[inserted, null]]);
  return inserted;
}

/**
 * Changes a stored row of a family on the service's own behalf (a worker's decision, a secret's
 * rotation) through the same pipeline as a client's update of it: decode, prepare, validate,
 * write, afterWrite and events, in the caller's transaction, which holds the row's lock. `extra`
 * sets stored values the client's version has no field for, for the family's rules to read.
 */
export async function updateNested(ctx: RuleContext, family: Family, row: StoredObject, body: Json, extra?: Map<string, unknown>): Promise<StoredObject> {
  const op: OperationContext = { ...ctx, collection: { path: family.table, family } };
  const [updated] = await applyUpdates(op, [[row, body]], extra);
  return updated;
}

/**
 * Deletes stored rows of a family that go with another object (an entity's stakeholders) through
 * the same steps as a client's delete of them: the family's beforeDelete, the delete, and events,
 * in the caller's transaction.
 */
export async function deleteNested(ctx: RuleContext, family: Family, rows: StoredObject[]): Promise<void> {
  if (rows.length > 0) await deleteRows({ ...ctx, collection: { path: family.table, family } }, rows);
}

async function deleteRows(ctx: OperationContext, rows: StoredObject[]): Promise<void> {
  await ctx.collection.family.rules?.beforeDelete?.(ctx, rows);
  await objects.deleteObjects(ctx.tx, ctx.collection.family.table, rows.map((r) => r.id));
  await emit(ctx, rows.map((row) => [null, row]));
}

/**
 * A row of another family made ready to write (decoded, prepared, validated) by that family's own
 * rules, for a caller that writes it in its own statement (a payment's inline method). The caller
 * owes it the family's afterWrite, if any, once written.
 */
export async function prepareNested(ctx: RuleContext, family: Family, body: unknown): Promise<{ row: StoredObject; events: EventDraft[] }> {
  const op: OperationContext = { ...ctx, collection: { path: family.table, family } };
  const row = await prepareCreate(op, body);
  return { row, events: family.rules?.events?.(op, row, null) ?? [] };
}

/**
 * Create steps for a family whose create, for the rows `plain` accepts, writes that one row and
 * nothing else (no afterWrite work, no events): prepared on the pool, stored by one INSERT that
 * needs no BEGIN/COMMIT around it (shared with the family's other such creates arriving
 * meanwhile). `plain` sees the decoded row before the family's rules, so a rule that would write
 * (an inline entity) never runs outside a transaction.
 */
export function oneRowCreate(plain: (row: StoredObject) => boolean): CreateSteps<StoredObject> {
  return {
    async plan(ctx, body) {
      const decoded = decodeCreate(ctx, body);
      if (!plain(decoded)) return null;
      const row = await completeCreate(ctx, decoded);
      if (ctx.collection.family.rules?.events?.(ctx, row, null).length) return null;
      return row;
    },
    async write(ctx, row) {
      const { table, name } = ctx.collection.family;
      // Creates that commit on their own and arrive together share one statement (group commit),
      // which audits each row with its own request's actor; without that, one statement each.
      if (groupCommit.enabled && !ctx.tx.inTransaction && auditRows.inStatement) {
        const db = ctx.tx;
        const writer = groupWriterOf(db, `create:${table}`, (items: CreatedItem[]) => insertAuditedRows(db, table, name, items));
        return writer.write({ tenant: ctx.tenant, row, audit: currentAuditSetting() });
      }
      const [inserted] = await objects.insertObjects(ctx.tx, table, ctx.tenant, [row]);
      return inserted;
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

export async function create(ctx: OperationContext, body: Json, query: ListQuery): Promise<WriteAnswer> {
  const many = body.object === 'list';
  if (many && !Array.isArray(body.values)) throw invalidAttributes({ values: 'Must be a list' });
  const prepared = many ? await prepareAll(body.values as unknown[], (item) => prepareCreate(ctx, item)) : [await prepareCreate(ctx, body)];
  const inserted = await objects.insertObjects(ctx.tx, ctx.collection.family.table, ctx.tenant, prepared);
  await afterWrite(ctx, inserted.map((row) => [row, null]));
  await emit(ctx, inserted.map((row) => [row, null]));
  ctx.decisions?.settle();
  const shaped = await shape(ctx, inserted, query.fields);
  return answerOf(ctx, inserted, many ? { object: 'list', values: shaped } : shaped[0]);
}

function decodeUpdate(ctx: OperationContext, row: StoredObject, body: Json, extra?: Map<string, unknown>): StoredObject {
  const { values } = decodeInput(ctx.collection.family, ctx.version, row.type, body, 'update', extra);
  return applyValues(row, values);
}

async function applyUpdates(ctx: OperationContext, pairs: Array<[StoredObject, Json]>, extra?: Map<string, unknown>): Promise<StoredObject[]> {
  const rules = ctx.collection.family.rules;
  const nextRows = await prepareAll(pairs, async ([row, body]) => {
    let next = decodeUpdate(ctx, row, body, extra);
    if (rules?.prepare) next = await rules.prepare(ctx, next, row);
    await rules?.validate?.(ctx, next, row);
    return next;
  });
  const updated = await objects.updateObjects(ctx.tx, ctx.collection.family.table, nextRows);
  const changes = updated.map((next, i): [StoredObject, StoredObject] => [next, pairs[i][0]]);
  await afterWrite(ctx, changes);
  await emit(ctx, changes);
  return updated;
}

export async function updateOne(ctx: OperationContext, id: string, body: Json, query: ListQuery): Promise<Json> {
  const { family, fixedType } = ctx.collection;
  const row = await objects.selectObjectById(ctx.tx, family.table, ctx.tenant, id, { type: fixedType, forUpdate: true });
  if (!row) throw notFound(`No ${family.name} with id ${id}`);
  try {
    const [updated] = await applyUpdates(ctx, [[row, body]]);
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
  const updated = await applyUpdates(ctx, pairs);
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
  const updated = await applyUpdates(ctx, rows.map((row): [StoredObject, Json] => [row, body]));
  return { object: 'list', values: await shape(ctx, updated, query.fields) };
}

async function removeRows(ctx: OperationContext, rows: StoredObject[], query: ListQuery): Promise<Json[]> {
  const rendered = await shape(ctx, rows, query.fields);
  await deleteRows(ctx, rows);
  return rendered;
}

export async function deleteOne(ctx: OperationContext, id: string, query: ListQuery): Promise<Json> {
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
