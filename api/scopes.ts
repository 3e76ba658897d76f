/**
 * What a restricted key may do: `<collection>:read` or `<collection>:write` (write implies read),
 * or `*:read`, collections named as in the URL. A key without scopes may do everything.
 */
import { collectionByPath, collections } from './families/index.ts';

export type Access = 'read' | 'write';

/** Collections reached by routes of their own rather than through the family registry. */
const ROUTED = ['access_tokens', 'webhooks', 'webhook_logs', 'users', 'test_clock', 'test_data', 'orgs', 'request_logs'];

export function knownCollections(): string[] {
  return [...new Set([...collectionByPath.keys(), ...ROUTED])].sort();
}

/** Parses `transactions:write,customers:read`; throws naming what is not a scope. */
export function parseScopes(text: string): string[] {
  const known = new Set(knownCollections());
  const scopes = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (scopes.length === 0) throw new Error('a scope list needs at least one <collection>:read|write');
  for (const scope of scopes) {
    const [collection, access, extra] = scope.split(':');
    if (extra !== undefined || (access !== 'read' && access !== 'write')) throw new Error(`${scope} is not a scope: use <collection>:read or <collection>:write`);
    if (collection === '*' ? access !== 'read' : !known.has(collection)) {
      throw new Error(collection === '*' ? '*:write is not a scope: name each collection a key may change' : `${scope}: no collection ${collection} (known: ${[...known].join(', ')})`);
    }
  }
  return [...new Set(scopes)];
}

/** The collection a request path reaches (`/transactions/txn_1` → transactions, `/accounts/orgs` → orgs). */
export function collectionOfPath(path: string): string {
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'accounts' && parts[1] === 'orgs') return 'orgs';
  return parts[0] ?? '';
}

/** The scope a request needs: reading for GET and HEAD, writing for the rest. */
export function neededScope(method: string, path: string): string {
  return `${collectionOfPath(path)}:${method === 'GET' || method === 'HEAD' ? 'read' : 'write'}`;
}

/** Whether scopes (null: unrestricted) grant `needed`. */
export function grants(scopes: string[] | null, needed: string): boolean {
  if (scopes === null) return true;
  const [collection, access] = needed.split(':');
  if (scopes.includes(needed)) return true;
  if (access === 'read' && (scopes.includes(`${collection}:write`) || scopes.includes('*:read'))) return true;
  return false;
}

/**
 * A list a key may read in part: `/accounts` with only `customers:read` shows customers. The
 * types of the collection's family that narrower collections the key may read pin down (`/customers`
 * is accounts of type customer); empty when none does.
 */
export function readableTypes(scopes: string[] | null, path: string): string[] {
  const collection = collectionByPath.get(collectionOfPath(path));
  if (!collection || collection.fixedType) return [];
  return collections
    .filter((c) => c.family === collection.family && c.fixedType && grants(scopes, `${c.path}:read`))
    .map((c) => c.fixedType!)
    .filter((type, i, all) => all.indexOf(type) === i);
}
