/**
 * SQL of delivery attempts: how an attempt is opened before its request goes out, and how its
 * answer is recorded. An attempt is logged before it is sent, so a crash between the two leaves an
 * attempt whose outcome is unknown, never one that no log shows.
 */
import { rows, type Db } from '../../api/db/connection.ts';
import { deliveryJobs, type DeliveryJob } from '../../api/families/webhooks/deliveryJobs.ts';
import { WEBHOOK_LOG_STATUSES, type WebhookLogStatus } from '../../api/families/webhook_logs/family.ts';
import { UNFLUSHED } from './unflushed.ts';

/** An attempt opened: its number, its log, and the webhook as it is now (what can change between attempts). */
export interface OpenedAttempt {
  delivery_id: string;
  attempt: number;
  log_id: string;
  webhook: Record<string, unknown>;
}

/** What the answer (or its absence) adds to the attempt's log. */
export interface AttemptAnswer {
  status: WebhookLogStatus;
  httpStatus: number | null;
  oauthStatus: number | null;
  durationMs: number;
  response: string | null;
  error: string | null;
  nextAttemptAt: Date | null;
}

export interface AttemptRecord {
  job: DeliveryJob;
  opened: OpenedAttempt;
  answer: AttemptAnswer;
  state: 'pending' | 'delivered' | 'failed';
}

/**
 * The log of a delivery's attempt: derived rather than drawn, so the next attempt (or a cancel)
 * finds the log of the one before by its key. It sorts by time as the delivery's id does
 * (deliveryId): the delivery's time digits, then 17 hex digits of a hash of delivery and attempt,
 * so a new log lands at the right edge of the primary key, not at a random page of it.
 */
export function attemptLogId(delivery: string, attempt: string): string {
  return `'whl_' || substr(${delivery}, 5, 7) || substr(md5(${delivery} || ':' || ${attempt}), 1, 17)`;
}

/**
 * The keys an attempt's log may have, as an SQL array: attemptLogId's, and the one of logs written
 * by releases whose log keys did not sort by time (24 hex digits of the same hash), which a
 * database upgraded from them still holds for attempts whose answer never came.
 */
function attemptLogKeys(delivery: string, attempt: string): string {
  return `array[${attemptLogId(delivery, attempt)}, 'whl_' || substr(md5(${delivery} || ':' || ${attempt}), 1, 24)]`;
}

/**
 * `pending`, as a value the planner does not see when it plans (an InitPlan): what the attempts'
 * statements compare a delivery's state with. Compared with the literal, a batch of deliveries
 * named by an id array (all pending: they are being attempted) is estimated as the array's size
 * times the share of pending deliveries in the table's statistics: a row or two when those were
 * taken with few pending. The planner then joins the batch with its input by a nested loop that
 * reads the whole input for each delivery: 22,350 rows compared, 10 ms, for a batch of 150. With
 * the value unseen it estimates the batch over the number of states, and joins by hash: 2 ms.
 */
const PENDING = `(select 'pending'::text)`;

/** The webhook's URL as logged: without the user:password that webhooks made before those were refused may carry. */
export const LOGGED_URL = `regexp_replace(w.data->>'url', '^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@', '\\1')`;

/**
 * Opens attempts before their requests go out, many in one statement. A delivery still pending
 * whose webhook is active takes its next attempt number, and its log is written `in_flight`; one
 * whose webhook is no longer active is cancelled, without an attempt, and logged `skipped` (one
 * update of the deliveries does both, so each is found by its key once). Either way the delivery's
 * latest attempt, if still `in_flight` (its sender stopped before recording the answer), becomes
 * `unknown`. Returns the attempts opened; a delivery not among them is not to be sent. The
 * deliveries are named by an id array, as in recordAttempts. Attempts of one webhook share one
 * object for it.
 */
export async function openAttempts(db: Db, jobs: DeliveryJob[]): Promise<OpenedAttempt[]> {
  const input = jobs.map((job) => ({
    delivery_id: job.delivery_id,
    log: { webhook_id: job.webhook_id, event_id: job.event_id, trigger: job.trigger, triggered_on: { id: job.object_id, object: job.object_type } },
  }));
  const opened = await rows<OpenedAttempt & { webhook_id: string; webhook: Record<string, unknown> | null }>(db,
    `with input as (select r.* from jsonb_to_recordset(?::jsonb) as r(delivery_id text, log jsonb), ${UNFLUSHED}),
     moved as (
       update webhook_deliveries d
          set attempts = d.attempts + case when w.data->>'status' = 'active' then 1 else 0 end,
              state = case when w.data->>'status' = 'active' then d.state else 'cancelled' end,
              finished_at = case when w.data->>'status' = 'active' then d.finished_at else now() end
         from webhooks w, input i
        where d.id = any(?::text[]) and i.delivery_id = d.id and w.id = d.webhook_id and d.state = ${PENDING}
       returning d.id, d.org_id, d.environment, d.attempts, d.webhook_id, w.data as webhook, ${LOGGED_URL} as url, i.log,
                 coalesce(w.data->>'status' = 'active', false) as active),
     opened as (select * from moved where active),
     cancelled as (select * from moved where not active),
     skipped as (
       insert into webhook_logs (id, org_id, environment, data)
       select ${attemptLogId('c.id', "'0'")}, c.org_id, c.environment, c.log || jsonb_build_object('url', c.url, 'attempt', 0,
                'status', ?::text, 'http_status', null, 'oauth_status', null, 'duration_ms', null, 'response', null,
                'error', 'the webhook is disabled', 'next_attempt_at', null)
         from cancelled c
       on conflict (id) do nothing
       returning 1),
     logged as (
       insert into webhook_logs (id, org_id, environment, data)
       select ${attemptLogId('o.id', 'o.attempts')}, o.org_id, o.environment, o.log || jsonb_build_object('url', o.url, 'attempt', o.attempts,
                'status', ?::text, 'http_status', null, 'oauth_status', null, 'duration_ms', null, 'response', null, 'error', null, 'next_attempt_at', null)
         from opened o
       returning 1),
     unanswered as (
       update webhook_logs l set data = l.data || jsonb_build_object('status', ?::text), modified_at = clock_timestamp()
        where l.id = any(array(select unnest(${attemptLogKeys('o.id', 'o.attempts - 1')}) from opened o where o.attempts > 1
                               union all select unnest(${attemptLogKeys('c.id', 'c.attempts')}) from cancelled c where c.attempts > 0))
          and l.data->>'status' = ?
       returning 1)
     select id as delivery_id, attempts as attempt, ${attemptLogId('id', 'attempts')} as log_id, webhook_id,
            case when row_number() over (partition by webhook_id) = 1 then webhook end as webhook
       from opened`,
    [JSON.stringify(input), jobs.map((job) => job.delivery_id), WEBHOOK_LOG_STATUSES.skipped,
      WEBHOOK_LOG_STATUSES.inFlight, WEBHOOK_LOG_STATUSES.unknown, WEBHOOK_LOG_STATUSES.inFlight]);
  // Each webhook comes once (a backlog's batch is many deliveries of one webhook): the others share it.
  const webhooks = new Map(opened.filter((row) => row.webhook !== null).map((row) => [row.webhook_id, row.webhook!]));
  return opened.map(({ webhook_id: webhookId, ...row }) => ({ ...row, webhook: webhooks.get(webhookId)! }));
}

/**
 * Records attempts' answers and moves their deliveries on, many in one statement: each attempt's
 * log completed, and the delivery, if this is still its latest attempt, moved to its state with the
 * next job of one still pending (same key, carrying the same payload), and the failure streak of a
 * webhook that delivered reset (rows locked in id order, so concurrent batches cannot deadlock on
 * them). Rows are also named by id arrays: the planner takes any set-returning function for 100
 * rows, and against a table of some ten thousand deliveries it then scanned the whole table (417
 * pages at 15k) to update a handful.
 */
export async function recordAttempts(db: Db, records: AttemptRecord[]): Promise<void> {
  const input = records.map(({ job, opened, answer, state }) => {
    const nextAt = answer.nextAttemptAt?.toISOString() ?? null;
    return {
      // The payload is the next job's (a retry's): an answer that ends the delivery carries none.
      log_id: opened.log_id, delivery_id: job.delivery_id, webhook_id: job.webhook_id, attempt: opened.attempt, state, next_at: nextAt, payload: state === 'pending' ? job : null,
      answer: {
        status: answer.status, http_status: answer.httpStatus, oauth_status: answer.oauthStatus, duration_ms: answer.durationMs,
        response: answer.response, error: answer.error, next_attempt_at: nextAt,
      },
    };
  });
  await rows(db,
    `with input as (
       select * from jsonb_to_recordset(?::jsonb) as r(log_id text, delivery_id text, webhook_id text, attempt int, state text,
         next_at timestamptz, payload json, answer jsonb)),
     answered as (
       update webhook_logs l set data = l.data || i.answer, modified_at = clock_timestamp()
         from input i where l.id = i.log_id and l.id = any(?::text[])
       returning 1),
     moved as (
       update webhook_deliveries d set state = i.state, next_attempt_at = i.next_at,
              finished_at = case when i.state = 'pending' then null else now() end
         from input i where d.id = i.delivery_id and d.id = any(?::text[]) and d.attempts = i.attempt and d.state = ${PENDING}
       returning d.id, d.webhook_id, i.payload, i.next_at, i.state),
     jobs as (select ${deliveryJobs("(select * from moved where state = 'pending') m", 'next_at', true)}
               where exists (select 1 from moved where state = 'pending')),
     recovered as (
       update webhooks w set data = w.data - 'failing_since'
        where w.id in (select id from webhooks
                        where id in (select webhook_id from moved where state = 'delivered') and jsonb_exists(data, 'failing_since')
                        order by id for update)
       returning 1)
     select (select count(*) from answered) + (select count(*) from jobs) + (select count(*) from recovered) as n`,
    [JSON.stringify(input), input.map((row) => row.log_id), input.map((row) => row.delivery_id)]);
}
