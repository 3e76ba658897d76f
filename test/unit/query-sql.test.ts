/**
 * Unit tier: the query compiler on a field schema of its own (no family, no database). Each `q`
 * is parsed as the API parses it and compiled to the SQL and bindings a repository would run.
 */
import t from 'tap';
import { ApiError } from '../../api/errors.ts';
import { parseQ } from '../../api/query/q.ts';
import { SqlCompiler } from '../../api/query/toSql.ts';
import type { FieldSchema, Version } from '../../api/schema/fields.ts';

const schema: FieldSchema = {
  name: 'unit_query_things',
  fields: [
    { store: 'id', type: 'id', v1: 'id', v2: 'id' },
    { store: 'created_at', type: 'datetime', v1: 'created_at', v2: 'created_at' },
    { store: 'amount', type: 'money', v1: 'amount', v2: 'amount' },
    { store: 'style', type: 'string', v1: 'funding_style', v2: 'funding.style', values: { v1: { net: 'netted' } } },
    { store: 'attrs', type: 'json', v1: 'attrs', v2: 'attrs' },
    { store: 'card.number', type: 'string', v1: 'card_number', v2: 'card.number', writeOnly: true },
  ],
};

function compile(q: string, version: Version = 'v2') {
  return new SqlCompiler(schema, version).where(parseQ(q));
}

function refusal(q: string, version: Version = 'v2'): ApiError {
  try {
    compile(q, version);
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error(`expected ${q} to be refused`);
}

t.test('a money literal is bound in minor units against the stored amount', async (t) => {
  t.same(compile('amount >= "10.50"'), { sql: '((data #>> ?::text[])::bigint) >= (?::bigint)', bindings: [['amount'], 1050] });
});

t.test('every value is a binding, never SQL text', async (t) => {
  const hostile = compile(`id == "x'); drop table transactions; --"`);
  t.same(hostile.bindings, ["x'); drop table transactions; --"]);
  t.notMatch(hostile.sql, /drop table/);
});

t.test('a field resolves by the version’s path, and a value by the version’s names', async (t) => {
  t.same(compile('funding_style == "net"', 'v1').bindings, [['style'], 'netted'], 'v1 net is stored netted');
  t.same(compile('funding.style == "net"', 'v2').bindings, [['style'], 'net'], 'v2 has no rename');
  t.equal(refusal('funding_style == "net"', 'v2').details?.funding_style, 'Unknown field', 'the v1 path is no v2 field');
});

t.test('a path below a json field compares as text at its stored path', async (t) => {
  t.same(compile('attrs.region == "eu"'), { sql: '(data #>> ?::text[]) = (?::text)', bindings: [['attrs', 'region'], 'eu'] });
});

t.test('unknown and write-only fields are refused as unknown', async (t) => {
  for (const [q, field] of [['colour == "red"', 'colour'], ['card.number == "4242"', 'card.number']]) {
    const error = refusal(q);
    t.equal(error.status, 400, q);
    t.same(error.details, { [field]: 'Unknown field' }, q);
  }
});

t.test('null compares only with == and !=', async (t) => {
  t.same(compile('amount == null'), { sql: '((data #>> ?::text[])::bigint) is null', bindings: [['amount']] });
  t.same(compile('amount != null').sql, '((data #>> ?::text[])::bigint) is not null');
  t.match(refusal('amount > null').details, { q: /null used with >/ });
});

t.test('a value that is not of the field’s type is refused before Postgres sees it', async (t) => {
  t.same(refusal('amount == "lots"').details, { amount: 'Must be an amount' });
  t.match(refusal('created_at == amount').details, { q: 'datetime compared with money' });
  t.match(refusal('sum(amount) > 3').details, { sum: 'Aggregates are allowed in fields only' });
});

t.test('a ? pattern escapes LIKE characters and takes * as the wildcard', async (t) => {
  t.same(compile('id ? "50%_off*"'), { sql: '(("id")::text) ilike ?', bindings: ['50\\%\\_off%'] });
});
