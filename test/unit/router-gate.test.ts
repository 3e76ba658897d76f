/**
 * Unit tier: a gated router (api/http/routerGate.ts) answers exactly what the router alone
 * answers, and passes every other path on without matching it.
 */
import Router from '@koa/router';
import Koa from 'koa';
import t from 'tap';
import { firstSegmentGate } from '../../api/http/routerGate.ts';

async function answer(app: Koa, path: string): Promise<string> {
  const server = app.listen(0);
  try {
    const { port } = server.address() as { port: number };
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return `${response.status} ${await response.text()}`;
  } finally {
    server.close();
  }
}

function appWith(router: Router, gated: boolean): Koa {
  const app = new Koa();
  app.use(gated ? firstSegmentGate(router) : (router.routes() as unknown as Koa.Middleware));
  app.use((ctx) => {
    ctx.body = 'passed on';
  });
  return app;
}

t.test('the gate answers as the router does, and passes other first segments on', async (t) => {
  const router = new Router();
  router.get('/webhooks/:id/logs', (ctx) => {
    ctx.body = `logs of ${ctx.params.id}`;
  });
  router.get('/docs', (ctx) => {
    ctx.body = 'docs';
  });
  for (const path of ['/webhooks/wh_1/logs', '/webhooks/wh_1', '/docs', '/docs/more', '/customers/acct_1', '/', '/docsx', '/webhooks']) {
    t.equal(await answer(appWith(router, true), path), await answer(appWith(router, false), path), path);
  }
  t.equal(await answer(appWith(router, true), '/customers/acct_1'), '200 passed on');
  t.equal(await answer(appWith(router, true), '/webhooks/wh_1/logs'), '200 logs of wh_1');
});

t.test('a router whose route starts with a parameter is used as it is', async (t) => {
  const router = new Router();
  router.get('/:collection', (ctx) => {
    ctx.body = `list ${ctx.params.collection}`;
  });
  t.equal(await answer(appWith(router, true), '/customers'), '200 list customers');
});
