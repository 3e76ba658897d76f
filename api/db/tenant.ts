/**
 * The two ways a query names its tenant (migrations/20261123000010_tenant_keys.ts):
 *
 * - a scan of the tenant's rows (lists, defaults, matching) names `tenant_key(org_id,
 *   environment)`, the leading expression of every tenant index;
 * - a lookup by id names only the plain columns, which no index leads with, so the primary key is
 *   the only index it can use however the statistics estimate the tenant.
 *
 * Both keep `org_id = ?`, so each query stays routable to one shard when tables are distributed
 * by org (ARCHITECTURE.md, Scale).
 */
import type { Sql } from './connection.ts';

/** One org's environment: every tenant table's rows belong to exactly one. */
export interface Tenant {
  orgId: string;
  environment: 'test' | 'live';
}

/** Who is asking: a secret key (with its settings) or a client token (with its intent). */
export type Principal =
  | { kind: 'secret'; keyId: string; settings: Record<string, unknown> }
  | { kind: 'client'; tokenId: string; intent: Record<string, unknown>; /** the payment link whose page made the token */ paymentLinkId?: string };

/** `org_id = ? and environment = ?` for the table alias given (none by default), as a by-id check. */
export function tenantCheck(tenant: Tenant, alias = ''): Sql {
  const p = alias ? `${alias}.` : '';
  return { sql: `${p}org_id = ? and ${p}environment = ?`, bindings: [tenant.orgId, tenant.environment] };
}

/** The tenant as an index scan: the tenant-key expression plus the plain columns. */
export function tenantScan(tenant: Tenant, alias = ''): Sql {
  const p = alias ? `${alias}.` : '';
  return {
    sql: `tenant_key(${p}org_id, ${p}environment) = ? and ${p}org_id = ? and ${p}environment = ?`,
    bindings: [`${tenant.orgId}/${tenant.environment}`, tenant.orgId, tenant.environment],
  };
}
