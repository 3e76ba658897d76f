/** `POST /access_tokens`: a secret key mints a client token for a browser element. */
import Router from '@koa/router';
import type { Context } from 'koa';
import { createClientToken } from '../families/intents/clientTokens.ts';
import { recordTokenIntent } from '../families/intents/tokenIntents.ts';
import { forbidden } from '../errors.ts';
import { completeInTransaction } from './idempotency.ts';
import type { RequestState } from './state.ts';

export function accessTokenRoutes(): Router {
  const router = new Router();
  router.post('/access_tokens', async (ctx) => {
    const c = ctx as Context & { state: RequestState };
    if (c.state.principal?.kind !== 'secret') throw forbidden('Client tokens are created with a secret key');
    const { db, domain } = c.state.services;
    c.body = await db.transaction(async (tx) => {
      const token = await createClientToken(tx, c.state.tenant!, c.state.body ?? {}, domain.now());
      await recordTokenIntent(tx, c.state.tenant!, domain, token);
      await completeInTransaction(c, tx, 200, token);
      return token;
    });
  });
  return router;
}
