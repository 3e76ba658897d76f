/**
 * The generic routes: the ten operations of spec §4.1 for every registered collection.
 * HTTP concerns only: pick the operation, parse the query string, open the transaction.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { Db } from '../db/connection.ts';
import type { Collection } from '../engine/family.ts';
import * as operations from '../engine/operations.ts';
import type { OperationContext } from '../engine/operations.ts';
import { isPlainObject, type Json } from '../engine/view.ts';
import { badRequest, errorResponse, forbidden, notFound } from '../errors.ts';
import { collectionByPath } from '../families/index.ts';
import type { ListQuery } from '../query/ast.ts';
import { parseListQuery } from '../query/listQuery.ts';
import { completeInTransaction } from './idempotency.ts';
import { aggregateAsCsv, listAsCsv } from './csvExport.ts';
import { answeredByReporting, exportFromReporting, queryReporting } from './reportingProxy.ts';
import type { RequestState } from './state.ts';

type Ctx = Context & { state: RequestState; params: Record<string, string> };

function collectionOf(ctx: Ctx): Collection {
  const collection = collectionByPath.get(ctx.params.collection);
  if (!collection) throw notFound(`No collection /${ctx.params.collection}`);
  const only = ctx.state.readableType;
  return only ? { ...collection, fixedType: only } : collection;
}

function listQueryOf(ctx: Ctx): ListQuery {
  return parseListQuery([...new URLSearchParams(ctx.querystring)], ctx.get('Accept'));
}

function operationContext(ctx: Ctx, tx: Db): OperationContext {
  return {
    tx,
    tenant: ctx.state.tenant!,
    version: ctx.state.version,
    principal: ctx.state.principal!,
    domain: ctx.state.services.domain,
    collection: collectionOf(ctx),
  };
}

/** Reads run on the pool; writes run in one transaction that also stores the idempotent response. */
async function read(ctx: Ctx, work: (op: OperationContext) => Promise<Json>): Promise<void> {
  ctx.body = await work(operationContext(ctx, ctx.state.services.db));
}

async function write(ctx: Ctx, work: (op: OperationContext) => Promise<operations.WriteAnswer>): Promise<void> {
  answer(ctx, await committed(ctx, work));
}

/** The write's transaction, with its idempotent response: rejects only when it did not commit. */
async function committed(ctx: Ctx, work: (op: OperationContext) => Promise<operations.WriteAnswer>): Promise<operations.WriteAnswer> {
  refuseReadOnly(ctx);
  return ctx.state.services.db.transaction(async (tx) => {
    const answered = await work(operationContext(ctx, tx));
    await storeAnswer(ctx, tx, answered);
    return answered;
  });
}

function refuseReadOnly(ctx: Ctx): void {
  if (collectionOf(ctx).readOnly) throw badRequest(`/${ctx.params.collection} is read-only`, { method: `${ctx.method} is not allowed here` });
}

/** The idempotent response's store for a write that opens its own transaction, when the request has a key. */
function answerStore(ctx: Ctx): ((op: OperationContext, answered: operations.WriteAnswer) => Promise<void>) | undefined {
  return ctx.state.idempotency ? (op, answered) => storeAnswer(ctx, op.tx, answered) : undefined;
}

/** A change answered with what it rendered. */
async function plainly(body: Promise<Json>): Promise<operations.WriteAnswer> {
  return { body: await body, error: null };
}

/** A stored decline commits like any change, then answers as an error (and is replayed as one). */
async function storeAnswer(ctx: Ctx, tx: Db, answered: operations.WriteAnswer): Promise<void> {
  const stored = answered.error ? errorResponse(answered.error) : { status: 200, body: answered.body };
  await completeInTransaction(ctx, tx, stored.status, stored.body);
}

function answer(ctx: Ctx, outcome: operations.WriteAnswer): void {
  if (outcome.error) throw outcome.error;
  ctx.body = outcome.body;
}

/**
 * `POST /c` through the create door (operations.createObjects): it plans a payment on the pool and
 * writes it in one statement, runs every other create in one transaction, and asks the processor
 * outside any transaction either way. An idempotent response is stored with the write.
 */
async function createOne(ctx: Ctx, input: Json, query: ListQuery): Promise<void> {
  // A client token acts once: a list would let one browser credential make many objects.
  if (ctx.state.principal?.kind === 'client' && input.object === 'list') throw forbidden('A client token creates one object per request, not a list');
  refuseReadOnly(ctx);
  answer(ctx, await operations.create(operationContext(ctx, ctx.state.services.db), input, query, answerStore(ctx)));
}

/**
 * `PUT /c/{id}` through the update door (operations.update): it writes a plain change in one
 * statement on the pool and any other in one transaction, the idempotent response with it.
 */
async function updateById(ctx: Ctx, id: string, changes: Json, query: ListQuery): Promise<void> {
  refuseReadOnly(ctx);
  answer(ctx, await operations.update(operationContext(ctx, ctx.state.services.db), id, changes, query, answerStore(ctx)));
}

/**
 * `DELETE /c/{id}` through the delete door (operations.deleteById): it deletes a plain row in one
 * statement on the pool and any other in one transaction, the idempotent response with it.
 */
async function deleteById(ctx: Ctx, id: string, query: ListQuery): Promise<void> {
  refuseReadOnly(ctx);
  answer(ctx, await operations.deleteById(operationContext(ctx, ctx.state.services.db), id, query, answerStore(ctx)));
}

function body(ctx: Ctx): Json {
  return ctx.state.body ?? {};
}

function listValues(ctx: Ctx): unknown[] | null {
  const b = body(ctx);
  if (b.object !== 'list') return null;
  if (!Array.isArray(b.values)) throw badRequest('A list body needs values', { values: 'Must be a list' });
  return b.values;
}

function requireQueryMode(query: ListQuery): void {
  if (!query.queryMode) throw badRequest('mode=query is required to change every object matching a query', { mode: 'Required' });
  if (!query.where) throw badRequest('A query update or delete needs at least one filter', { q: 'Required' });
}

export function objectRoutes(): Router {
  const router = new Router();
  router.get('/:collection', async (ctx) => {
    const c = ctx as Ctx;
    const query = listQueryOf(c);
    const collection = collectionOf(c);
    if (query.format === 'parquet') {
      if (collection.family.name !== 'transaction') throw badRequest('Parquet exports are answered for /transactions only', { format: 'parquet is for /transactions' });
      if (c.state.services.config.reportingUrl === null) throw badRequest('Parquet exports come from the reporting process, which is off here (REPORTING_URL=off): use format=csv', { format: 'parquet needs the reporting process' });
      return exportFromReporting(c, collection);
    }
    const aggregate = operations.isAggregateQuery(query) || operations.hasComputedFields(query);
    if (answeredByReporting(c, collection, query)) {
      const answer = await queryReporting(c, collection);
      if (query.format === 'csv') return aggregateAsCsv(c, query, answer);
      c.body = answer;
      return;
    }
    if (query.format === 'csv' && aggregate) {
      const answer = await operations.list(operationContext(c, c.state.services.db), query);
      return aggregateAsCsv(c, query, answer as unknown as Record<string, unknown>);
    }
    if (query.format === 'csv') return listAsCsv(c, operationContext(c, c.state.services.db), query);
    return read(c, (op) => operations.list(op, query));
  });
  router.get('/:collection/:id', (ctx) => read(ctx as Ctx, (op) => operations.getOne(op, ctx.params.id, listQueryOf(ctx as Ctx))));
  router.post('/:collection', (ctx) => createOne(ctx as Ctx, body(ctx as Ctx), listQueryOf(ctx as Ctx)));
  router.put('/:collection/:id', (ctx) => updateById(ctx as Ctx, ctx.params.id, body(ctx as Ctx), listQueryOf(ctx as Ctx)));
  router.put('/:collection', (ctx) => {
    const c = ctx as Ctx;
    const query = listQueryOf(c);
    const values = listValues(c);
    if (values) return write(c, (op) => plainly(operations.updateMany(op, values, query)));
    requireQueryMode(query);
    const changes = body(c);
    if (!isPlainObject(changes) || Object.keys(changes).length === 0) throw badRequest('An update needs a body', { body: 'Required' });
    return write(c, (op) => plainly(operations.updateByQuery(op, query, changes)));
  });
  router.delete('/:collection/:id', (ctx) => deleteById(ctx as Ctx, ctx.params.id, listQueryOf(ctx as Ctx)));
  router.delete('/:collection', (ctx) => {
    const c = ctx as Ctx;
    const query = listQueryOf(c);
    const values = listValues(c);
    if (values) return write(c, (op) => plainly(operations.deleteMany(op, values, query)));
    requireQueryMode(query);
    return write(c, (op) => plainly(operations.deleteByQuery(op, query)));
  });
  return router;
}
