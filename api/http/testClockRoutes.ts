/**
 * `GET /test_clock` and `PUT /test_clock {now}` (CONTRACT §15): a test environment's clock, moved
 * forward to run every timed step that falls due (invoicing runs, automatic payments, funding runs) in time order.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { runBillingDay } from '../families/billing_schedules/run.ts';
import { moveTestClock, readTestClock } from '../families/billing_schedules/testClock.ts';
import { runFundingDay } from '../families/funding/run.ts';
import { forbidden } from '../errors.ts';
import type { RequestState } from './state.ts';

type Ctx = Context & { state: RequestState };

function requireSecretKey(ctx: Ctx): void {
  if (ctx.state.principal?.kind !== 'secret') throw forbidden('The test clock is moved with a secret key');
}

export function testClockRoutes(): Router {
  const router = new Router();
  router.get('/test_clock', async (ctx) => {
    const c = ctx as Ctx;
    requireSecretKey(c);
    c.body = await readTestClock(c.state.services.db, c.state.tenant!, c.state.services.domain.now());
  });
  router.put('/test_clock', async (ctx) => {
    const c = ctx as Ctx;
    requireSecretKey(c);
    c.body = await moveTestClock(c.state.services.db, c.state.services.domain, c.state.tenant!, c.state.body?.now, [runBillingDay, runFundingDay]);
  });
  return router;
}
