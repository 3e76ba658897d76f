import type { Knex } from 'knex';

/**
 * An invoice's e-mail to its customer (POST /invoices/{id}/resend_email) is a message of the link
 * e-mail outbox about the invoice, numbered per invoice and recipient like a payment link's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table link_emails drop constraint link_emails_object_type_check;
    alter table link_emails add constraint link_emails_object_type_check check (object_type in ('intent', 'payment_activation', 'payment_link', 'invoice'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    delete from link_emails where object_type = 'invoice';
    alter table link_emails drop constraint link_emails_object_type_check;
    alter table link_emails add constraint link_emails_object_type_check check (object_type in ('intent', 'payment_activation', 'payment_link'));
  `);
}
