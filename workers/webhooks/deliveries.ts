/** SQL of delivery attempts: what an attempt reads, and how its outcome is recorded. */
import { rows, type Db } from '../../api/db/connection.ts';
import { deliveryJobs, JOB_PAYLOAD, type DeliveryJob } from '../../api/families/webhooks/deliveryJobs.ts';
import { newId } from '../../api/ids.ts';

/** What can change between attempts, read at each one. */
export interface DeliveryState {
  delivery_id: string;
  state: string;
  attempts: number;
  webhook: Record<string, unknown>;
}

/** The states and webhooks of many deliveries in one query; missing ones (deleted) are absent. */
export async function loadDeliveryStates(db: Db, deliveryIds: string[]): Promise<DeliveryState[]> {
  return rows<DeliveryState>(db,
    `select d.id as delivery_id, d.state, d.attempts, w.data as webhook
       from webhook_deliveries d join webhooks w on w.id = d.webhook_id
      where d.id = any(?::text[])`,
    [deliveryIds]);
}

/** The job payload of a delivery, for a job enqueued before payloads carried it. */
export async function loadDeliveryJob(db: Db, deliveryId: string): Promise<DeliveryJob | null> {
  const found = await rows<{ payload: DeliveryJob }>(db,
    `select ${JOB_PAYLOAD} as payload from webhook_deliveries d join events e on e.id = d.event_id where d.id = ?`, [deliveryId]);
  return found[0]?.payload ?? null;
}

export interface AttemptLog {
  webhookId: string;
  eventId: string;
  trigger: string;
  triggeredOn: Record<string, unknown>;
  url: string;
  httpStatus: number | null;
  oauthStatus: number | null;
  attempt: number;
  durationMs: number;
  response: string | null;
  error: string | null;
  nextAttemptAt: Date | null;
}

export interface AttemptRecord {
  job: DeliveryJob;
  log: AttemptLog;
  state: 'pending' | 'delivered' | 'failed';
}

/**
 * Records attempts and moves their deliveries on, many in one statement: each attempt's log, the
 * delivery's state, the next job of a delivery still pending (same key, carrying the same payload),
 * and the failure streak of a webhook that delivered reset (rows locked in id order, so concurrent
 * batches cannot deadlock on them). The deliveries are also named by an id array: the planner
 * takes any set-returning function for 100 rows, and against a table of some ten thousand
 * deliveries it then scanned the whole table (417 pages at 15k) to update a handful.
 */
export async function recordAttempts(db: Db, records: AttemptRecord[]): Promise<void> {
  const input = records.map(({ job, log, state }) => {
    const nextAt = log.nextAttemptAt?.toISOString() ?? null;
    return {
      log_id: newId('whl'), org_id: job.org_id, environment: job.environment, delivery_id: job.delivery_id, webhook_id: job.webhook_id,
      attempt: log.attempt, state, next_at: nextAt, payload: job,
      log: {
        webhook_id: log.webhookId, event_id: log.eventId, trigger: log.trigger, triggered_on: log.triggeredOn, url: log.url,
        http_status: log.httpStatus, oauth_status: log.oauthStatus, attempt: log.attempt, duration_ms: log.durationMs,
        response: log.response, error: log.error, next_attempt_at: nextAt,
      },
    };
  });
  await rows(db,
    `with input as (
       select * from jsonb_to_recordset(?::jsonb) as r(log_id text, org_id text, environment text, delivery_id text,
         webhook_id text, attempt int, state text, next_at timestamptz, payload json, log jsonb)),
     logged as (
       insert into webhook_logs (id, org_id, environment, data) select log_id, org_id, environment, log from input returning 1),
     moved as (
       update webhook_deliveries d set attempts = i.attempt, state = i.state, next_attempt_at = i.next_at,
              finished_at = case when i.state = 'pending' then null else now() end
         from input i where d.id = i.delivery_id and d.id = any(?::text[])
       returning d.id, i.payload, i.next_at, i.state),
     jobs as (select ${deliveryJobs("(select * from moved where state = 'pending') m", 'next_at')}
               where exists (select 1 from moved where state = 'pending')),
     recovered as (
       update webhooks w set data = w.data - 'failing_since'
        where w.id in (select id from webhooks
                        where id in (select webhook_id from input where state = 'delivered') and jsonb_exists(data, 'failing_since')
                        order by id for update)
       returning 1)
     select (select count(*) from logged) + (select count(*) from jobs) + (select count(*) from recovered) as n`,
    [JSON.stringify(input), input.map((row) => row.delivery_id)]);
}

/** A delivery whose webhook is no longer active: it ends without an attempt. */
export async function cancelDelivery(db: Db, deliveryId: string): Promise<void> {
  await rows(db, `update webhook_deliveries set state = 'cancelled', finished_at = now() where id = ? and state = 'pending'`, [deliveryId]);
}
