import type { Knex } from 'knex';

/**
 * Two operator actions (console and API): a webhook's test event, and a payment link's e-mail sent
 * again.
 *
 * - `events.test`: an event written to check one webhook's receiver. It is written with a null
 *   `txid`, so the dispatcher (which follows only events with one) never hands it to other
 *   webhooks; its one delivery is enqueued with it. Resends never choose it, and its delivery body
 *   says `"test": true`. Adding a column with a constant default rewrites no rows.
 * - `link_emails.resend`: the outbox holds one message per link, recipient and resend (0 for the
 *   first message), so sending a link's e-mail again is a new message, still sent at most once.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table events add column test boolean not null default false;
    alter table link_emails add column resend int not null default 0;
    alter table link_emails drop constraint link_emails_object_id_recipient_key;
    alter table link_emails add constraint link_emails_object_id_recipient_resend_key unique (object_id, recipient, resend);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    delete from link_emails where resend > 0;
    alter table link_emails drop constraint link_emails_object_id_recipient_resend_key;
    alter table link_emails add constraint link_emails_object_id_recipient_key unique (object_id, recipient);
    alter table link_emails drop column resend;
    delete from webhook_deliveries where event_id in (select id from events where test);
    delete from events where test;
    alter table events drop column test;
  `);
}
