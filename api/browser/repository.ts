/** SQL behind the hosted pages: rows found by a capability (a token's hash, a link's id) alone. */
import { rows, type Db } from '../db/connection.ts';

/** A client token as a hosted page sees it, whatever its state. */
export interface ClientTokenRow {
  org_id: string;
  environment: 'test' | 'live';
  intent_kind: string;
  intent: Record<string, unknown>;
  status: string;
  uses: number;
  /** its `expires_at` has passed, by the database's clock */
  expired: boolean;
}

/** The client token with this hash, active or not; null when there is none. */
export async function findClientTokenByHash(db: Db, hash: Buffer): Promise<ClientTokenRow | null> {
  const [row] = await rows<ClientTokenRow>(db,
    `select org_id, environment, intent_kind, intent, status, uses, expires_at <= now() as expired from access_tokens where token_hash = ?`,
    [hash]);
  return row ?? null;
}

export interface PaymentLinkRow {
  id: string;
  org_id: string;
  environment: 'test' | 'live';
  data: Record<string, unknown>;
}

/** The payment link with this id, whichever tenant it belongs to. */
export async function findPaymentLinkById(db: Db, id: string): Promise<PaymentLinkRow | null> {
  const [row] = await rows<PaymentLinkRow>(db, 'select id, org_id, environment, data from payment_links where id = ?', [id]);
  return row ?? null;
}
