/** Webhook sub-resources: `/webhooks/{id}/logs`, `/webhooks/{id}/payment_link`, `/webhooks/{id}/resend`, `/webhooks/{id}/test`, `/webhooks/{id}/rotate_secret`. */
import Router from '@koa/router';
import type { Context } from 'koa';
import { resendEvents } from '../families/webhooks/resend.ts';
import { sendTestEvent } from '../families/webhooks/testEvent.ts';
import { generateSenderSecret, ROTATION_OVERLAP } from '../families/webhooks/rules.ts';
import { render } from '../engine/view.ts';
import { selectObjectById } from '../db/objects.ts';
import * as operations from '../engine/operations.ts';
import { parseDateTime } from '../schema/values.ts';
import { badRequest, invalidAttributes, notFound } from '../errors.ts';
import { collectionByPath } from '../families/index.ts';
import { webhooks } from '../families/webhooks/family.ts';
import type { Expr } from '../query/ast.ts';
import { parseListQuery } from '../query/listQuery.ts';
import { completeInTransaction } from './idempotency.ts';
import { overlapSeconds, refuseUnknown } from './rotation.ts';
import type { RequestState } from './state.ts';

type Ctx = Context & { state: RequestState; params: Record<string, string> };

async function requireWebhook(ctx: Ctx) {
  const webhook = await selectObjectById(ctx.state.services.db, webhooks.table, ctx.state.tenant!, ctx.params.id);
  if (!webhook) throw notFound(`No webhook with id ${ctx.params.id}`);
  return webhook;
}

export function webhookRoutes(): Router {
  const router = new Router();

  router.get('/webhooks/:id/logs', async (ctx) => {
    const c = ctx as Ctx;
    await requireWebhook(c);
    const query = parseListQuery([...new URLSearchParams(c.querystring)]);
    const ofWebhook: Expr = {
      kind: 'cmp', op: '==', pos: 0,
      left: { kind: 'field', path: ['webhook_id'], pos: 0 },
      right: { kind: 'literal', value: c.params.id, fromString: true, pos: 0 },
    };
    query.where = query.where ? { kind: 'and', items: [ofWebhook, query.where], pos: 0 } : ofWebhook;
    c.body = await operations.list({
      tx: c.state.services.db, tenant: c.state.tenant!, version: c.state.version, principal: c.state.principal!,
      domain: c.state.services.domain, collection: collectionByPath.get('webhook_logs')!,
    }, query);
  });

  router.get('/webhooks/:id/payment_link', async (ctx) => {
    const webhook = await requireWebhook(ctx as Ctx);
    throw notFound(webhook.data.payment_link_id ? `Payment link ${String(webhook.data.payment_link_id)} not found` : 'This webhook has no payment link');
  });

  router.post('/webhooks/:id/resend', async (ctx) => {
    const c = ctx as Ctx;
    await requireWebhook(c);
    const body = c.state.body ?? {};
    refuseUnknown(body, ['event_id', 'since', 'until', 'only_missed']);
    const eventId = typeof body.event_id === 'string' ? body.event_id : undefined;
    const since = typeof body.since === 'string' ? parseDateTime(body.since) : undefined;
    const until = typeof body.until === 'string' ? parseDateTime(body.until) : undefined;
    if (since === null || until === null) throw invalidAttributes({ [since === null ? 'since' : 'until']: 'Must be a date and time' });
    if (!eventId && !since) throw badRequest('Name an event_id, or a since (and optional until) time range', { event_id: 'Required unless since is given' });
    if (since && until && until < since) throw invalidAttributes({ until: 'Must not be before since' });
    const onlyMissed = booleanField(body.only_missed, 'only_missed');
    if (onlyMissed && eventId) throw invalidAttributes({ only_missed: 'Goes with a since/until window, not an event_id' });
    const created = await resendEvents(c.state.services.db, c.state.tenant!, c.params.id, { eventId, since, until, onlyMissed });
    if (eventId && created.length === 0) throw notFound(`No event ${eventId} for this webhook's trigger`);
    // One event: the delivery it starts. A window: how many events it sends again.
    const answer = eventId
      ? { object: 'list', values: created.map((d) => ({ object: 'webhook_delivery', id: d.id, event_id: d.event_id, series: d.series })) }
      : { object: 'webhook_resend', webhook_id: c.params.id, events: created.length };
    await completeInTransaction(c, c.state.services.db, 200, answer);
    c.body = answer;
  });

  router.post('/webhooks/:id/test', async (ctx) => {
    const c = ctx as Ctx;
    refuseUnknown(c.state.body ?? {}, []);
    const delivery = await sendTestEvent(c.state.services.db, c.state.tenant!, c.params.id);
    const answer = { object: 'webhook_delivery', id: delivery.id, webhook_id: c.params.id, event_id: delivery.event_id, series: 0, test: true };
    await completeInTransaction(c, c.state.services.db, 200, answer);
    c.body = answer;
  });

  router.post('/webhooks/:id/rotate_secret', async (ctx) => {
    const c = ctx as Ctx;
    const body = c.state.body ?? {};
    refuseUnknown(body, ['previous_expires_in']);
    const expiresIn = overlapSeconds(body.previous_expires_in, 'previous_expires_in');
    const secret = generateSenderSecret();
    const { db, domain } = c.state.services;
    const answer = await db.transaction(async (tx) => {
      const { tenant, version, principal } = c.state;
      const webhook = await selectObjectById(tx, webhooks.table, tenant!, c.params.id, { forUpdate: true });
      if (!webhook) throw notFound(`No webhook with id ${c.params.id}`);
      // The webhook family's update seals the new secret; the overlap keeps the one in use signing.
      const overlap = expiresIn === 0 ? null : new Date(domain.now().getTime() + expiresIn * 1000).toISOString();
      const ctx = { tx, tenant: tenant!, version, principal: principal!, domain };
      const rotated = await operations.updateNested(ctx, webhooks, webhook, { sender_secret: secret }, new Map([[ROTATION_OVERLAP, overlap]]));
      const rendered = { ...render(webhooks, version, rotated), sender_secret: secret };
      await completeInTransaction(c, tx, 200, rendered);
      return rendered;
    });
    c.body = answer;
  });

  return router;
}

/** A boolean from JSON or a form (`true`/`false`); absent is false. */
function booleanField(given: unknown, name: string): boolean {
  if (given === undefined || given === null || given === false || given === 'false') return false;
  if (given === true || given === 'true') return true;
  throw invalidAttributes({ [name]: 'Must be true or false' });
}
