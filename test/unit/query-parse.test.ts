import t, { type Test } from 'tap';
import { ApiError } from '../../api/errors.ts';
import { parseOperand, parseQ } from '../../api/query/q.ts';
import { parseListQuery } from '../../api/query/listQuery.ts';

/** Drops `pos` everywhere so shape assertions read like the query; positions get their own tests. */
function shape(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(shape);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(Object.entries(node).filter(([key]) => key !== 'pos').map(([key, value]) => [key, shape(value)]));
}

const field = (...path: string[]) => ({ kind: 'field', path });
const num = (value: number, text = String(value)) => ({ kind: 'literal', value, fromString: false, text });
const str = (value: string) => ({ kind: 'literal', value, fromString: true });
const nul = { kind: 'literal', value: null, fromString: false };
const cmp = (left: unknown, op: string, right: unknown) => ({ kind: 'cmp', op, left, right });
const call = (fn: string, ...args: unknown[]) => ({ kind: 'call', fn, args });

function caught(parse: () => unknown): ApiError {
  try {
    parse();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected the parse to fail');
}

function rejectsQ(t: Test, q: string, reason: string): void {
  const err = caught(() => parseQ(q));
  const label = q.length > 30 ? `${q.slice(0, 30)}…` : q;
  t.equal(err.status, 400, `${label}: status`);
  t.equal(err.errorType, 'BadRequest', `${label}: error type`);
  t.equal(err.message, 'Invalid q expression', `${label}: description`);
  t.same(err.details, { q: reason }, `${label}: details`);
}

function rejectsList(t: Test, pairs: Array<[string, string]>, details: Record<string, string>): void {
  const err = caught(() => parseListQuery(pairs));
  t.equal(err.status, 400);
  t.equal(err.errorType, 'BadRequest');
  t.same(err.details, details, JSON.stringify(pairs));
}

t.test('q: && binds tighter than ||', async (t) => {
  t.same(shape(parseQ('a == 1 || b == 2 && c == 3')), {
    kind: 'or',
    items: [cmp(field('a'), '==', num(1)), { kind: 'and', items: [cmp(field('b'), '==', num(2)), cmp(field('c'), '==', num(3))] }],
  });
  t.same(shape(parseQ('a == 1 && b == 2 || c == 3')), {
    kind: 'or',
    items: [{ kind: 'and', items: [cmp(field('a'), '==', num(1)), cmp(field('b'), '==', num(2))] }, cmp(field('c'), '==', num(3))],
  });
});

t.test('q: a chain of one operator is one flat junction', async (t) => {
  t.same(shape(parseQ('a && b && c')), {
    kind: 'and',
    items: ['a', 'b', 'c'].map((name) => ({ kind: 'truthy', operand: field(name) })),
  });
});

t.test('q: parentheses override precedence', async (t) => {
  t.same(shape(parseQ('(a == 1 || b == 2) && c == 3')), {
    kind: 'and',
    items: [{ kind: 'or', items: [cmp(field('a'), '==', num(1)), cmp(field('b'), '==', num(2))] }, cmp(field('c'), '==', num(3))],
  });
  t.same(shape(parseQ('((a > 1))')), cmp(field('a'), '>', num(1)));
});

t.test('q: ! negates a group, a bare value or another !', async (t) => {
  t.same(shape(parseQ('!(status == "void")')), { kind: 'not', expr: cmp(field('status'), '==', str('void')) });
  t.same(shape(parseQ('!is_test && a')), {
    kind: 'and',
    items: [{ kind: 'not', expr: { kind: 'truthy', operand: field('is_test') } }, { kind: 'truthy', operand: field('a') }],
  });
  t.same(shape(parseQ('!!a')), { kind: 'not', expr: { kind: 'not', expr: { kind: 'truthy', operand: field('a') } } });
});

t.test('q: ! on the left of a comparison is refused, not guessed', async (t) => {
  rejectsQ(t, '!a == 1', 'expected parentheses around a negated comparison at position 0');
});

t.test('q: every comparison operator, with a literal on either side', async (t) => {
  for (const op of ['==', '!=', '>=', '<=', '>', '<', '?']) {
    t.same(shape(parseQ(`amount ${op} 5`)), cmp(field('amount'), op, num(5)), op);
  }
  t.same(shape(parseQ('100<amount')), cmp(num(100), '<', field('amount')));
  t.same(shape(parseQ('name ? "*bob*"')), cmp(field('name'), '?', str('*bob*')));
});

t.test('q: a bare operand is a truthy condition', async (t) => {
  t.same(shape(parseQ('is_active')), { kind: 'truthy', operand: field('is_active') });
});

t.test('q: double-quoted strings take JSON escapes', async (t) => {
  t.same(shape(parseQ(String.raw`x == "a\"b\\c\u00e9\n"`)), cmp(field('x'), '==', str('a"b\\cé\n')));
  rejectsQ(t, String.raw`x == "\q"`, 'invalid escape at position 6');
});

t.test('q: single-quoted strings take backslash escapes', async (t) => {
  t.same(shape(parseQ(String.raw`x == 'it\'s a \\ "q"'`)), cmp(field('x'), '==', str('it\'s a \\ "q"')));
  // an unknown escape keeps its backslash, so the compiler still sees an escaped LIKE wildcard
  t.same(shape(parseQ(String.raw`x ? '5\*'`)), cmp(field('x'), '?', str('5\\*')));
});

t.test('q: numbers, booleans and null are typed literals', async (t) => {
  t.same(shape(parseQ('a == -12.50')), cmp(field('a'), '==', num(-12.5, '-12.50')));
  t.same(shape(parseQ('a == 0')), cmp(field('a'), '==', num(0)));
  t.same(shape(parseQ('a == true || a == false')), {
    kind: 'or',
    items: [
      cmp(field('a'), '==', { kind: 'literal', value: true, fromString: false }),
      cmp(field('a'), '==', { kind: 'literal', value: false, fromString: false }),
    ],
  });
  t.same(shape(parseQ('x != null')), cmp(field('x'), '!=', nul));
  t.same(shape(parseQ('x == "null"')), cmp(field('x'), '==', str('null')), 'a quoted null is a string');
});

t.test('q: date() with a bare or quoted date is a date literal', async (t) => {
  t.same(shape(parseQ('created_at >= date(2024-01-31)')), cmp(field('created_at'), '>=', { kind: 'date', value: '2024-01-31' }));
  t.same(shape(parseQ('created_at < date( 2024-01-31 10:20:30 )')), cmp(field('created_at'), '<', { kind: 'date', value: '2024-01-31 10:20:30' }));
  t.same(shape(parseQ('created_at < date("1/31/2024")')), cmp(field('created_at'), '<', { kind: 'date', value: '1/31/2024' }));
});

t.test('q: date() of a field is the date function', async (t) => {
  t.same(shape(parseQ('date(created_at) == date(2024-01-31)')), cmp(call('date', field('created_at')), '==', { kind: 'date', value: '2024-01-31' }));
});

t.test('q: paths with dots and brackets', async (t) => {
  t.same(shape(parseQ('status.value == "processed"')), cmp(field('status', 'value'), '==', str('processed')));
  t.same(shape(parseQ('status[value] == "processed"')), cmp(field('status', 'value'), '==', str('processed')));
  t.same(shape(parseQ('a[0][b] == 1')), cmp(field('a', '0', 'b'), '==', num(1)));
  t.same(shape(parseQ('a.b[c].d')), { kind: 'truthy', operand: field('a', 'b', 'c', 'd') });
});

t.test('q: custom attributes by bracket, dot or quoted name', async (t) => {
  t.same(shape(parseQ('attrs[region] == "west"')), cmp(field('attrs', 'region'), '==', str('west')));
  t.same(shape(parseQ('attrs.region == "west"')), cmp(field('attrs', 'region'), '==', str('west')));
  t.same(shape(parseQ('attrs[sales-region] == 1')), cmp(field('attrs', 'sales-region'), '==', num(1)));
  t.same(shape(parseQ('attrs["sales region"] == 1')), cmp(field('attrs', 'sales region'), '==', num(1)));
});

t.test('q: function calls, nested and with several arguments', async (t) => {
  t.same(shape(parseQ('lower(name) == "bob"')), cmp(call('lower', field('name')), '==', str('bob')));
  t.same(shape(parseQ('month(created_at) == 3')), cmp(call('month', field('created_at')), '==', num(3)));
  t.same(shape(parseQ('round(sum(attrs[fee]), 2) > 1')), cmp(call('round', call('sum', field('attrs', 'fee')), num(2)), '>', num(1)));
  t.same(shape(parseQ('count() > 1')), cmp(call('count'), '>', num(1)));
});

t.test('q: nodes carry the offset where they start', async (t) => {
  t.same(parseQ('x == 1 || lower(y) ? "a*"'), {
    kind: 'or',
    pos: 0,
    items: [
      { kind: 'cmp', op: '==', pos: 0, left: { kind: 'field', path: ['x'], pos: 0 }, right: { kind: 'literal', value: 1, fromString: false, text: '1', pos: 5 } },
      {
        kind: 'cmp',
        op: '?',
        pos: 10,
        left: { kind: 'call', fn: 'lower', pos: 10, args: [{ kind: 'field', path: ['y'], pos: 16 }] },
        right: { kind: 'literal', value: 'a*', fromString: true, pos: 21 },
      },
    ],
  });
});

t.test('q: syntax errors are BadRequest with what was expected and where', async (t) => {
  rejectsQ(t, 'amount > ', 'expected a value at position 9');
  rejectsQ(t, 'amount > )', 'expected a value at position 9');
  rejectsQ(t, 'a ||)', 'unexpected ")" at position 4');
  rejectsQ(t, 'a == 1)', 'unexpected ")" at position 6');
  rejectsQ(t, 'a == "abc', 'unterminated string at position 5');
  rejectsQ(t, "a == 'abc\\'", 'unterminated string at position 5');
  rejectsQ(t, '(a == 1 && b', 'expected ")" at position 12');
  rejectsQ(t, 'a == 1 && ', 'unexpected end of input at position 10');
  rejectsQ(t, '', 'unexpected end of input at position 0');
  rejectsQ(t, 'a = 1', 'unexpected "=" at position 2');
  rejectsQ(t, 'a & b', 'unexpected "&" at position 2');
  rejectsQ(t, 'a == 1 b', 'unexpected "b" at position 7');
  rejectsQ(t, 'a == 1 == 2', 'unexpected "==" at position 7');
  rejectsQ(t, 'lower(name', 'expected "," or ")" at position 10');
  rejectsQ(t, 'created_at > date(2024-01-31', 'expected ")" at position 28');
  rejectsQ(t, 'attrs[region == 1', 'expected "]" at position 12');
  rejectsQ(t, 'attrs[] == 1', 'expected a name at position 6');
  rejectsQ(t, 'status. == 1', 'expected a name after "." at position 7');
});

t.test('q: length and nesting are bounded', async (t) => {
  const deepest = `${'('.repeat(64)}a${')'.repeat(64)}`;
  t.same(shape(parseQ(deepest)), { kind: 'truthy', operand: field('a') });
  rejectsQ(t, `${'('.repeat(65)}a${')'.repeat(65)}`, 'nesting deeper than 64 at position 64');
  rejectsQ(t, `${'!'.repeat(65)}a`, 'nesting deeper than 64 at position 64');
  rejectsQ(t, `${'abs('.repeat(65)}a${')'.repeat(65)} > 1`, 'nesting deeper than 64 at position 259');

  const longest = `a == "${'x'.repeat(4096 - 7)}"`;
  t.equal(longest.length, 4096);
  t.same(shape(parseQ(longest)), cmp(field('a'), '==', str('x'.repeat(4096 - 7))));
  rejectsQ(t, `${longest} `, 'expression longer than 4096 characters at position 4096');
});

t.test('parseOperand: parses one term and reports positions inside the enclosing value', async (t) => {
  t.same(shape(parseOperand('sum(amount)')), call('sum', field('amount')));
  t.same(parseOperand('status.value', 7), { kind: 'field', path: ['status', 'value'], pos: 7 });
  const err = caught(() => parseOperand('sum(', 4, 'fields'));
  t.equal(err.status, 400);
  t.same(err.details, { fields: 'expected a value at position 8' });
  t.same(caught(() => parseOperand('a b', 0, 'fields')).details, { fields: 'unexpected "b" at position 2' });
});

t.test('list: no parameters gives the defaults', async (t) => {
  t.same(parseListQuery([]), { where: null, fields: null, groupBy: [], orderBy: [], limit: 1000, offset: 0, queryMode: false, format: 'json', limitGiven: false });
});

t.test('list: format=csv or Accept: text/csv asks for an export, which has no default limit', async (t) => {
  t.match(parseListQuery([['format', 'csv']]), { format: 'csv', limitGiven: false, limit: Number.MAX_SAFE_INTEGER });
  t.match(parseListQuery([], 'text/html, text/csv;q=0.9'), { format: 'csv' });
  t.match(parseListQuery([], 'application/json'), { format: 'json', limit: 1000 });
  t.match(parseListQuery([['format', 'csv'], ['limit', '50000']]), { limit: 50000, limitGiven: true }, 'an export may ask beyond the JSON page');
  const refusal = (pairs: Array<[string, string]>) => {
    try {
      parseListQuery(pairs);
      return null;
    } catch (error) {
      return (error as { details?: unknown }).details;
    }
  };
  t.match(refusal([['limit', '50000']]), { limit: /0 to 10000/ }, 'a JSON list may not');
  t.same(refusal([['format', 'xml']]), { format: 'expected json, csv or parquet' });
});

t.test('list: fields in all three encodings', async (t) => {
  const expected = [
    { expr: field('id'), source: 'id' },
    { expr: call('sum', field('amount')), source: 'sum(amount)' },
  ];
  t.same(shape(parseListQuery([['fields', 'id,sum(amount)']]).fields), expected, 'comma separated');
  t.same(shape(parseListQuery([['fields[]', 'id'], ['fields[]', 'sum(amount)']]).fields), expected, 'repeated []');
  t.same(shape(parseListQuery([['fields[1]', 'sum(amount)'], ['fields[0]', 'id']]).fields), expected, 'indexed, in index order');
});

t.test('list: fields * is the default set, count alone counts rows', async (t) => {
  t.same(shape(parseListQuery([['fields', '*, ledger ,count']]).fields), [
    { expr: null, source: '*' },
    { expr: field('ledger'), source: 'ledger' },
    { expr: call('count'), source: 'count' },
  ]);
});

t.test('list: commas inside function arguments or quotes do not split terms', async (t) => {
  t.same(shape(parseListQuery([['fields', 'round(amount, 2),attrs["a,b"]']]).fields), [
    { expr: call('round', field('amount'), num(2)), source: 'round(amount, 2)' },
    { expr: field('attrs', 'a,b'), source: 'attrs["a,b"]' },
  ]);
});

t.test('list: group_by in all three encodings, count and functions allowed', async (t) => {
  const expected = [
    { expr: field('status'), source: 'status' },
    { expr: call('month', field('created_at')), source: 'month(created_at)' },
    { expr: field('attrs', 'region'), source: 'attrs[region]' },
  ];
  t.same(shape(parseListQuery([['group_by', 'status,month(created_at),attrs[region]']]).groupBy), expected);
  t.same(shape(parseListQuery([['group_by[]', 'status'], ['group_by[]', 'month(created_at)'], ['group_by[]', 'attrs[region]']]).groupBy), expected);
  t.same(shape(parseListQuery([['group_by[2]', 'attrs[region]'], ['group_by[0]', 'status'], ['group_by[1]', 'month(created_at)']]).groupBy), expected);
  t.same(shape(parseListQuery([['group_by', 'count']]).groupBy), [{ expr: call('count'), source: 'count' }]);
  rejectsList(t, [['group_by', '*']], { group_by: 'unexpected "*" at position 0' });
});

t.test('list: order_by asc, desc and plain terms', async (t) => {
  t.same(shape(parseListQuery([['order_by[0]', 'desc(created_at)'], ['order_by[1]', 'asc(status.value)'], ['order_by[2]', 'id']]).orderBy), [
    { expr: field('created_at'), direction: 'desc', source: 'desc(created_at)' },
    { expr: field('status', 'value'), direction: 'asc', source: 'asc(status.value)' },
    { expr: field('id'), direction: 'asc', source: 'id' },
  ]);
  t.same(shape(parseListQuery([['order_by', 'desc(sum(amount)),month(created_at),desc(count)']]).orderBy), [
    { expr: call('sum', field('amount')), direction: 'desc', source: 'desc(sum(amount))' },
    { expr: call('month', field('created_at')), direction: 'asc', source: 'month(created_at)' },
    { expr: call('count'), direction: 'desc', source: 'desc(count)' },
  ]);
});

t.test('list: a bad order_by direction is a 400', async (t) => {
  rejectsList(t, [['order_by', 'descending(created_at)']], { order_by: 'expected asc(...) or desc(...) at position 0' });
  rejectsList(t, [['order_by[0]', 'id,desc(a, b)']], { 'order_by[0]': 'expected one expression in desc() at position 3' });
  rejectsList(t, [['order_by[]', 'asc()']], { 'order_by[]': 'expected one expression in asc() at position 0' });
});

t.test('list: a bad term names its key and the position inside the value', async (t) => {
  rejectsList(t, [['fields', 'id,,amount']], { fields: 'expected a field name at position 3' });
  rejectsList(t, [['fields[1]', 'id, sum(amount']], { 'fields[1]': 'expected "," or ")" at position 14' });
});

t.test('list: limit and offset bounds', async (t) => {
  t.equal(parseListQuery([['limit', '0']]).limit, 0);
  t.equal(parseListQuery([['limit', '10000']]).limit, 10000);
  t.equal(parseListQuery([['offset', '250']]).offset, 250);
  for (const bad of ['10001', '-1', '1.5', 'ten', '']) {
    rejectsList(t, [['limit', bad]], { limit: 'expected an integer from 0 to 10000' });
  }
  rejectsList(t, [['offset', '-5']], { offset: 'expected a non-negative integer' });
  rejectsList(t, [['limit', '5'], ['limit', '6']], { limit: 'given more than once' });
});

t.test('list: mode=query is the only mode', async (t) => {
  t.equal(parseListQuery([['mode', 'query']]).queryMode, true);
  rejectsList(t, [['mode', 'all']], { mode: 'expected "query"' });
});

t.test('list: a filter value without an operator is equality on a string', async (t) => {
  t.same(shape(parseListQuery([['amount', '100']]).where), cmp(field('amount'), '==', str('100')));
  t.same(shape(parseListQuery([['description', '']]).where), cmp(field('description'), '==', str('')));
});

t.test('list: filter operators at the start of the value', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['!void', '!=', 'void'],
    ['<=5', '<=', '5'],
    ['>=5', '>=', '5'],
    ['<5', '<', '5'],
    ['>5', '>', '5'],
    ['?*bob*', '?', '*bob*'],
  ];
  for (const [value, op, operand] of cases) {
    t.same(shape(parseListQuery([['x', value]]).where), cmp(field('x'), op, str(operand)), value);
  }
});

t.test('list: null is a literal null only when written exactly', async (t) => {
  t.same(shape(parseListQuery([['x', 'null']]).where), cmp(field('x'), '==', nul));
  t.same(shape(parseListQuery([['x', '!null']]).where), cmp(field('x'), '!=', nul));
  t.same(shape(parseListQuery([['x', 'NULL']]).where), cmp(field('x'), '==', str('NULL')));
});

t.test('list: | in a value ORs the alternatives', async (t) => {
  t.same(shape(parseListQuery([['status', 'processed|authorized|!null']]).where), {
    kind: 'or',
    items: [cmp(field('status'), '==', str('processed')), cmp(field('status'), '==', str('authorized')), cmp(field('status'), '!=', nul)],
  });
});

t.test('list: repeated keys, other filters and q are ANDed', async (t) => {
  t.same(shape(parseListQuery([['amount', '>100'], ['amount', '<1000'], ['q', 'type == "refund" || b'], ['q', 'c']]).where), {
    kind: 'and',
    items: [
      cmp(field('amount'), '>', str('100')),
      cmp(field('amount'), '<', str('1000')),
      { kind: 'or', items: [cmp(field('type'), '==', str('refund')), { kind: 'truthy', operand: field('b') }] },
      { kind: 'truthy', operand: field('c') },
    ],
  });
});

t.test('list: filter keys are paths, attributes or functions', async (t) => {
  const where = (key: string) => shape(parseListQuery([[key, '3']]).where);
  t.same(where('a[b][c]'), cmp(field('a', 'b', 'c'), '==', str('3')));
  t.same(where('items[0][amount]'), cmp(field('items', '0', 'amount'), '==', str('3')));
  t.same(where('attrs[region]'), cmp(field('attrs', 'region'), '==', str('3')));
  t.same(where('status.value'), cmp(field('status', 'value'), '==', str('3')));
  t.same(where('month(created_at)'), cmp(call('month', field('created_at')), '==', str('3')));
});

t.test('list: a key of unknown shape is a 400 naming the key', async (t) => {
  rejectsList(t, [['a[', '1']], { 'a[': 'expected a name at position 2' });
  rejectsList(t, [[']]', '1']], { ']]': 'expected a field name at position 0' });
  rejectsList(t, [['', '1']], { '': 'expected a field name at position 0' });
  rejectsList(t, [['amount>', '5']], { 'amount>': 'unexpected ">" at position 6' });
  rejectsList(t, [['5', '5']], { '5': 'expected a field name or function at position 0' });
  rejectsList(t, [['fields[a]', 'id']], { 'fields[a]': 'unsupported form of a reserved parameter' });
  rejectsList(t, [['limit[]', '5']], { 'limit[]': 'unsupported form of a reserved parameter' });
});

t.test('list: a bad q is reported as a q syntax error', async (t) => {
  const err = caught(() => parseListQuery([['q', 'a ==']]));
  t.equal(err.message, 'Invalid q expression');
  t.same(err.details, { q: 'expected a value at position 4' });
  t.equal(parseListQuery([['q', '  ']]).where, null, 'a blank q is no condition');
});

t.test('list: the request from the brief parses whole', async (t) => {
  const parsed = parseListQuery([
    ['amount', '>100'], ['amount', '<1000'], ['fields[0]', 'id'], ['fields[1]', 'sum(amount)'],
    ['order_by[0]', 'desc(created_at)'], ['q', 'amount > 5'], ['limit', '10'], ['attrs[region]', 'west'],
    ['month(created_at)', '3'], ['status[value]', 'processed'], ['mode', 'query'],
  ]);
  t.same(shape(parsed), {
    where: {
      kind: 'and',
      items: [
        cmp(field('amount'), '>', str('100')),
        cmp(field('amount'), '<', str('1000')),
        cmp(field('amount'), '>', num(5)),
        cmp(field('attrs', 'region'), '==', str('west')),
        cmp(call('month', field('created_at')), '==', str('3')),
        cmp(field('status', 'value'), '==', str('processed')),
      ],
    },
    fields: [{ expr: field('id'), source: 'id' }, { expr: call('sum', field('amount')), source: 'sum(amount)' }],
    groupBy: [],
    orderBy: [{ expr: field('created_at'), direction: 'desc', source: 'desc(created_at)' }],
    limit: 10,
    offset: 0,
    queryMode: true,
    format: 'json',
    limitGiven: true,
  });
});
