import type { Knex } from 'knex';

/**
 * Payment links e-mail their customer through the link e-mail outbox: `payment_link` rows, with
 * the words the message states beside the address (`summary`: the link's description and amount).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table link_emails drop constraint link_emails_object_type_check;
    alter table link_emails add constraint link_emails_object_type_check check (object_type in ('intent', 'payment_activation', 'payment_link'));
    alter table link_emails add column summary text;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    delete from link_emails where object_type = 'payment_link';
    alter table link_emails drop column summary;
    alter table link_emails drop constraint link_emails_object_type_check;
    alter table link_emails add constraint link_emails_object_type_check check (object_type in ('intent', 'payment_activation'));
  `);
}
