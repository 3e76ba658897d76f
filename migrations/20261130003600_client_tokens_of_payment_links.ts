import type { Knex } from 'knex';

/**
 * A client token minted by a payment link's page names its link: at most a few of a link's tokens
 * stay usable (api/browser/paymentLinkPage.ts), and the link's declined payments are counted
 * whichever body the token sends (api/http/rateLimit.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table access_tokens add column payment_link_id text;
    create index access_tokens_payment_link on access_tokens (payment_link_id, created_at) where payment_link_id is not null;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table access_tokens drop column payment_link_id');
}
