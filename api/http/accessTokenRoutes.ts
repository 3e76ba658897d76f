/** `POST /access_tokens`: a secret key mints a client token for a browser element. */
import Router from '@koa/router';
import type { Context } from 'koa';
import { issueClientToken, tokenRequest } from '../families/intents/clientTokens.ts';
import { createTokenIntent } from '../families/intents/tokenIntents.ts';
import { forbidden } from '../errors.ts';
import { completeInTransaction } from './idempotency.ts';
import type { RequestState } from './state.ts';

export function accessTokenRoutes(): Router {
  const router = new Router();
  router.post('/access_tokens', async (ctx) => {
    const c = ctx as Context & { state: RequestState };
    if (c.state.principal?.kind !== 'secret') throw forbidden('Client tokens are created with a secret key');
    const { db, domain } = c.state.services;
    const intent = tokenRequest(c.state.body ?? {});
    c.body = await db.transaction(async (tx) => {
      const { tenant, version, principal } = c.state;
      // A token with an element intent is an intent, made by that family's create.
      const token = intent
        ? await createTokenIntent({ tx, tenant: tenant!, version, principal: principal!, domain }, intent)
        : await issueClientToken(tx, tenant!, null, domain.now());
      await completeInTransaction(c, tx, 200, token);
      return token;
    });
  });
  return router;
}
