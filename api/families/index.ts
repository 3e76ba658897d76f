/** The registry: every URL collection and the family behind it. A new family is a new folder plus one line here. */
import type { Collection } from '../engine/family.ts';
import { accounts } from './accounts/family.ts';

export const collections: Collection[] = [
  { path: 'customers', family: accounts, fixedType: 'customer' },
  { path: 'processing_accounts', family: accounts, fixedType: 'processing' },
  { path: 'accounts', family: accounts },
];

export const collectionByPath = new Map(collections.map((c) => [c.path, c]));
