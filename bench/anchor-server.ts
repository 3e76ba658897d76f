/**
 * The benchmark's anchor: the least a Koa service can do for the same requests. POST /customers is
 * one INSERT (returning the row) into Settle's `accounts` table, GET /customers/:id one SELECT by
 * primary key; POST /payments one INSERT of one row (id, org, env, amount, a small jsonb, status)
 * into a table of its own with its primary key and one (org, env, created_at) index, made at start.
 * No auth, versions, validation, views, transactions or idempotency. Its throughput is what
 * bench/api-crud.ts and bench/payments.ts compare Settle with. PUT /customers/:id is one bare UPDATE
 * by primary key merging the body's name into the row (returning it), PUT /webhooks/:id the same
 * with the body's status, DELETE /customers/:id one DELETE by primary key (returning the row).
 *
 * Env: DATABASE_URL, PORT, ANCHOR_ORG_ID (the org rows are written for), ANCHOR_POOL (default 10,
 * Settle's default SETTLE_DB_POOL).
 */
import Koa from 'koa';
import pg from 'pg';
import { newId } from '../api/ids.ts';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('DATABASE_URL is not set');
const port = Number(process.env.PORT ?? 8090);
const orgId = process.env.ANCHOR_ORG_ID ?? 'org_anchor';
const pool = new pg.Pool({ connectionString: databaseUrl, max: Number(process.env.ANCHOR_POOL ?? 10), application_name: 'anchor' });

// The one-row payment's table: created here so the anchor owns it (Settle's migrations never see it).
await pool.query(`create table if not exists anchor_payments (
  id text primary key, org_id text not null, environment text not null, amount bigint not null,
  data jsonb not null, status text not null, created_at timestamptz not null default now())`);
await pool.query('create index if not exists anchor_payments_org_env_created on anchor_payments (org_id, environment, created_at)');

async function readJson(req: NodeJS.ReadableStream): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const app = new Koa();
app.use(async (ctx) => {
  if (ctx.method === 'POST' && ctx.path === '/customers') {
    const body = await readJson(ctx.req);
    const data = { name: body.name, email: body.email };
    const result = await pool.query(
      `insert into accounts (id, org_id, environment, type, data) values ($1, $2, 'test', 'customer', $3) returning *`,
      [newId('acct'), orgId, data],
    );
    ctx.body = result.rows[0];
    return;
  }
  if (ctx.method === 'POST' && ctx.path === '/payments') {
    const body = await readJson(ctx.req);
    const data = { description: body.description, customer_id: body.customer_id };
    const result = await pool.query(
      `insert into anchor_payments (id, org_id, environment, amount, data, status) values ($1, $2, 'test', $3, $4, 'processed') returning *`,
      [newId('txn'), orgId, Math.round(Number(body.amount) * 100), data],
    );
    ctx.body = result.rows[0];
    return;
  }
  // PUT /customers/:id sets the body's name, PUT /webhooks/:id its status: one bare UPDATE each.
  const updating = ctx.method === 'PUT' ? /^\/(customers|webhooks)\/([^/]+)$/.exec(ctx.path) : null;
  if (updating) {
    const [table, field] = updating[1] === 'customers' ? ['accounts', 'name'] : ['webhooks', 'status'];
    const body = await readJson(ctx.req);
    const result = await pool.query(
      `update ${table} set data = data || jsonb_build_object('${field}', $2::text), modified_at = now() where id = $1 returning *`,
      [updating[2], body[field]],
    );
    answerRow(ctx, result.rows[0]);
    return;
  }
  const deleting = ctx.method === 'DELETE' ? /^\/customers\/([^/]+)$/.exec(ctx.path) : null;
  if (deleting) {
    answerRow(ctx, (await pool.query('delete from accounts where id = $1 returning *', [deleting[1]])).rows[0]);
    return;
  }
  const match = ctx.method === 'GET' ? /^\/customers\/([^/]+)$/.exec(ctx.path) : null;
  if (match) {
    const result = await pool.query('select * from accounts where id = $1', [match[1]]);
    answerRow(ctx, result.rows[0]);
    return;
  }
  ctx.status = 404;
  ctx.body = { object: 'error', error_type: 'NotFound' };
});

/** The row found, or the API's 404 when there is none. */
function answerRow(ctx: Koa.Context, row: unknown): void {
  if (row) {
    ctx.body = row;
    return;
  }
  ctx.status = 404;
  ctx.body = { object: 'error', error_type: 'NotFound' };
}

const server = app.listen(port, '127.0.0.1');
server.keepAliveTimeout = 65_000;
server.once('listening', () => console.error(`anchor listening on http://127.0.0.1:${port}`));

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    pool.end().finally(() => process.exit(0));
  });
}
