/**
 * `POST /api_keys/roll`: the signing key rolls itself (CONTRACT §20's rotation, for an operator in
 * the console): a new key with the same org, environment and settings, shown once in the answer;
 * the old one keeps working `expire_in` seconds (default a day, 0 ends it at once, a week at most).
 * Only an unrestricted secret key may: a restricted one would otherwise mint its own successor.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { rollKey } from '../keys.ts';
import { forbidden } from '../errors.ts';
import { formatTimestamp } from '../schema/values.ts';
import { overlapSeconds, refuseUnknown } from './rotation.ts';
import type { RequestState } from './state.ts';

export function keyRoutes(): Router {
  const router = new Router();
  router.post('/api_keys/roll', async (ctx) => {
    const c = ctx as Context & { state: RequestState };
    const key = c.state.key;
    if (c.state.principal?.kind !== 'secret' || !key) throw forbidden('A secret key rolls itself');
    if (key.scopes !== null) throw forbidden('A restricted key is rolled with `settle keys roll`, not by itself');
    const body = c.state.body ?? {};
    refuseUnknown(body, ['expire_in']);
    const seconds = overlapSeconds(body.expire_in, 'expire_in');
    const rolled = await rollKey(c.state.services.db, key.id, seconds * 1000, c.state.services.domain.now());
    c.body = {
      object: 'api_key',
      id: rolled.id,
      environment: key.environment,
      key_prefix: rolled.prefix,
      secret_key: rolled.secret,
      previous: { id: key.id, key_prefix: key.key_prefix, expires_at: formatTimestamp(rolled.expiresAt) },
    };
  });
  return router;
}
