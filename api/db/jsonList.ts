/**
 * A list of JSON documents as one statement parameter: the documents' own texts joined into one
 * JSON array, which the statement turns back into a `jsonb[]` (`JSONB_LIST`, in the list's order,
 * a null entry a SQL null) for `unnest` beside the other columns' arrays.
 *
 * Sent as a `jsonb[]` array literal instead, every document's quotes and backslashes are escaped
 * again by the driver (pg's `prepareValue`, two regular expressions over each text) and sent
 * escaped: for a card payment's statement that cost the web process more than building the
 * documents did (about 100 µs a payment, bench/payments.ts). Joined texts need no escaping, as
 * each is JSON already.
 */

/** The `jsonb[]` of a `jsonList` parameter, for SQL in place of `?::jsonb[]`. */
export const JSONB_LIST = `array(select nullif(l.doc, 'null') from jsonb_array_elements(?::jsonb) with ordinality as l(doc, n) order by l.n)`;

/** Documents' JSON texts (null for none) as one JSON array's text. */
export function jsonList(texts: ReadonlyArray<string | null | undefined>): string {
  return `[${texts.map((text) => text ?? 'null').join(',')}]`;
}
