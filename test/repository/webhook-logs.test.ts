/**
 * Repository tier: webhook log SQL beyond the generic operations
 * (api/families/webhook_logs/repository.ts) against a real database, each test in a transaction
 * rolled back at its end.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { healthOfWebhooks, latestLogsOfWebhooks } from '../../api/families/webhook_logs/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

/** One attempt of a webhook, `minute` minutes into 2026. */
async function attempt(tx: Db, tenant: Tenant, id: string, webhookId: string, status: string, minute: number): Promise<void> {
  await tx.raw('insert into webhook_logs (id, org_id, environment, type, data, created_at) values (?, ?, ?, ?, ?::jsonb, ?)',
    [id, tenant.orgId, tenant.environment, 'webhook_log', JSON.stringify({ webhook_id: webhookId, status }), new Date(Date.UTC(2026, 0, 1, 0, minute))]);
}

async function seed(tx: Db): Promise<void> {
  await attempt(tx, acme, 'log_1', 'wh_a', 'failed', 1);
  await attempt(tx, acme, 'log_2', 'wh_a', 'delivered', 2);
  await attempt(tx, acme, 'log_3', 'wh_a', 'failed', 3);
  await attempt(tx, acme, 'log_4', 'wh_a', 'unknown', 4);
  await attempt(tx, acme, 'log_5', 'wh_b', 'failed', 5);
  await attempt(tx, globex, 'log_g', 'wh_a', 'delivered', 6);
}

t.test('the latest logs of each webhook named, newest first, within the tenant', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.same((await latestLogsOfWebhooks(tx, acme, ['wh_a', 'wh_b'], 2)).map((l) => l.id), ['log_5', 'log_4', 'log_3']);
    t.same((await latestLogsOfWebhooks(tx, acme, ['wh_b'], 5)).map((l) => l.webhook_id), ['wh_b']);
  });
});

t.test('health: the latest delivery and the failures after it; another tenant\'s delivery does not count', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    const health = await healthOfWebhooks(tx, acme, ['wh_a', 'wh_b', 'wh_none']);
    t.same(health.get('wh_a'), { webhook_id: 'wh_a', last_delivered_at: new Date(Date.UTC(2026, 0, 1, 0, 2)), failed_attempts: 2 });
    t.same(health.get('wh_b'), { webhook_id: 'wh_b', last_delivered_at: null, failed_attempts: 1 });
    t.same(health.get('wh_none'), { webhook_id: 'wh_none', last_delivered_at: null, failed_attempts: 0 });
  });
});
