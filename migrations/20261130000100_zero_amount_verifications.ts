import type { Knex } from 'knex';
import { CONVENIENCE_FEE_FIELDS, FUNDING_FIELDS } from './20261126000010_convenience_fee.ts';

/**
 * A processed payment of zero is a card verification (CONTRACT §24): it has nothing to fund, so it
 * takes no fee, no funding date and no ledger legs (legs are posted only for `funding_status:
 * pending`, which it never gets).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(FUNDING_FIELDS(CONVENIENCE_FEE_FIELDS, "(new.data->>'amount')::bigint = 0"));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(FUNDING_FIELDS(CONVENIENCE_FEE_FIELDS));
}
