import type { Knex } from 'knex';

/**
 * Invoices and their items (CONTRACT §12). One `invoice_items` row kind (`item_`) is three views:
 * v1 `line_item`, v2 `invoice_item` (type `charge`) and v2 `payment_allocation` (type `payment`).
 *
 * `invoice_recompute` is the one place an invoice's totals and status follow its items: every
 * change of an item (a charge added, a payment allocated, an allocation released) calls it in the
 * same database transaction, with the invoice row locked. Payments that stop standing (voided,
 * declined, rejected: by a client's PUT or by the worker) release their allocations through the
 * trigger on `transactions`, so no path that changes a transaction's status can forget it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table invoices (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null,
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index invoices_by_tenant_created on invoices (tenant_key(org_id, environment), created_at, id);
    create index invoices_by_tenant_status on invoices (tenant_key(org_id, environment), (data->>'status'));
    create index invoices_by_tenant_payer on invoices (tenant_key(org_id, environment), (data->'payer'->>'account_id'));
    create index invoices_by_tenant_schedule on invoices (tenant_key(org_id, environment), (data->>'billing_schedule_id'))
      where data->>'billing_schedule_id' is not null;
    -- A schedule produces one invoice per billing date, however many runs race.
    create unique index invoices_one_per_schedule_date on invoices ((data->>'billing_schedule_id'), (data->>'due_date'))
      where data->>'billing_schedule_id' is not null;

    create table invoice_items (
      id text primary key,
      org_id text not null,
      environment text not null,
      type text not null check (type in ('charge', 'payment')),
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index invoice_items_by_tenant_created on invoice_items (tenant_key(org_id, environment), created_at, id);
    create index invoice_items_by_tenant_invoice on invoice_items (tenant_key(org_id, environment), (data->>'invoice_id'));
    create index invoice_items_by_tenant_transaction on invoice_items (tenant_key(org_id, environment), (data->>'transaction_id'))
      where data->>'transaction_id' is not null;

    ${INVOICE_RECOMPUTE_SQL}
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger if exists transactions_release_invoice_allocations on transactions;
    drop function if exists release_invoice_allocations();
    drop function if exists invoice_recompute(text, text, text, text[]);
    drop table if exists invoice_items, invoices;
  `);
}

/**
 * `invoice_recompute` and the trigger that releases a payment's allocations with it, as this
 * migration made them (exported for the migration that removes them to put them back on `down`).
 */
export const INVOICE_RECOMPUTE_SQL = `
    create function invoice_recompute(invoice text, org text, env text, excluding text[] default '{}') returns void language plpgsql as $$
    declare
      found_invoice invoices%rowtype;
      number_sum bigint;
      charged bigint;
      paid bigint;
      next_status text;
    begin
      select * into found_invoice from invoices where id = invoice and org_id = org and environment = env for update;
      if not found then return; end if;
      -- Percentage charges are a share of the number charges: their totals follow them (half-up).
      select coalesce(sum((data->>'total')::bigint), 0) into number_sum
        from invoice_items
       where tenant_key(org_id, environment) = tenant_key(found_invoice.org_id, found_invoice.environment)
         and org_id = found_invoice.org_id and environment = found_invoice.environment
         and data->>'invoice_id' = invoice and not (id = any(excluding))
         and type = 'charge' and coalesce(data->>'value_units', 'number') <> 'percentage';
      update invoice_items
         set data = jsonb_set(data, '{total}', to_jsonb(round(number_sum * (data->>'amount')::numeric * coalesce((data->>'qty')::numeric, 1) / 10000)::bigint)),
             modified_at = now()
       where tenant_key(org_id, environment) = tenant_key(found_invoice.org_id, found_invoice.environment)
         and org_id = found_invoice.org_id and environment = found_invoice.environment
         and data->>'invoice_id' = invoice and not (id = any(excluding))
         and type = 'charge' and data->>'value_units' = 'percentage';
      select coalesce(sum((data->>'total')::bigint) filter (where type = 'charge'), 0),
             coalesce(sum((data->>'amount')::bigint) filter (where type = 'payment'), 0)
        into charged, paid
        from invoice_items
       where tenant_key(org_id, environment) = tenant_key(found_invoice.org_id, found_invoice.environment)
         and org_id = found_invoice.org_id and environment = found_invoice.environment
         and data->>'invoice_id' = invoice and not (id = any(excluding));
      next_status := case
        when found_invoice.data->>'status' in ('draft', 'closed') then found_invoice.data->>'status'
        when charged > 0 and paid >= charged then 'paid'
        when paid > 0 then 'partially_paid'
        else 'unpaid' end;
      update invoices set
        data = data || jsonb_build_object(
          'status', next_status,
          'totals', jsonb_build_object('total', charged, 'paid', paid, 'balance_due', greatest(charged - paid, 0)),
          'paid_timestamp', case
            when next_status <> 'paid' then null
            when found_invoice.data->>'status' = 'paid' then found_invoice.data->'paid_timestamp'
            else to_jsonb(now()) end),
        modified_at = now()
       where id = invoice and org_id = org and environment = env;
    end $$;

    create function release_invoice_allocations() returns trigger language plpgsql as $$
    declare
      released text;
    begin
      for released in
        delete from invoice_items
         where tenant_key(org_id, environment) = tenant_key(new.org_id, new.environment)
           and org_id = new.org_id and environment = new.environment
           and data->>'transaction_id' = new.id and type = 'payment'
        returning data->>'invoice_id'
      loop
        perform invoice_recompute(released, new.org_id, new.environment);
      end loop;
      return null;
    end $$;

    create trigger transactions_release_invoice_allocations
      after update of data on transactions
      for each row
      when (new.data->>'status' in ('voided', 'declined', 'rejected')
            and old.data->>'status' is distinct from new.data->>'status'
            and jsonb_array_length(coalesce(new.data->'allocation_plan', '[]'::jsonb)) > 0)
      execute function release_invoice_allocations();
`;
