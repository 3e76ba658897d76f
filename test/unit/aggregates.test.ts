/**
 * Unit tier: the table of aggregate functions (api/query/aggregates.ts) is what both stores'
 * compilers and the query parser know: every entry is accepted in `fields`, compiled for
 * PostgreSQL and for ClickHouse (over the rows, and over the rollup's partial columns), and refused
 * over a value it does not take; a name not in the table is unknown to all three.
 */
import t from 'tap';
import { ApiError } from '../../api/errors.ts';
import { transactionShape } from '../../api/families/transactions/fields.ts';
import { AGGREGATE_FUNCTIONS } from '../../api/query/aggregates.ts';
import { parseListQuery } from '../../api/query/listQuery.ts';
import { SqlCompiler } from '../../api/query/toSql.ts';
import { ClickHouseCompiler, NotCovered } from '../../reporting/compiler.ts';
import { COLUMN_BY_STORE, ROLLUP } from '../../reporting/columns.ts';

function term(fields: string) {
  const query = parseListQuery([['fields', fields]]);
  return query.fields![0].expr!;
}

function refused(compile: () => unknown): number | null {
  try {
    compile();
    return null;
  } catch (error) {
    if (error instanceof ApiError) return error.status;
    throw error;
  }
}

for (const [name, aggregate] of Object.entries(AGGREGATE_FUNCTIONS)) {
  t.test(`${name}: parsed, and compiled for both stores`, async (t) => {
    const postgres = new SqlCompiler(transactionShape, 'v1');
    const clickhouse = new ClickHouseCompiler(transactionShape, 'v1');
    const overMoney = term(`${name}(amount)`);
    const pg = postgres.term(overMoney, true);
    const ch = clickhouse.operand(overMoney, true);
    t.match(pg.sql, new RegExp(`\\(\\(?data`), 'PostgreSQL reads the stored amount');
    t.ok(ch.sql.length > 0, 'ClickHouse has an expression');
    t.equal(ch.exact !== undefined, aggregate.answers !== 'count', 'money travels exactly from ClickHouse unless it is a count');
    const overText = term(`${name}(description)`);
    if (aggregate.numeric) {
      t.equal(refused(() => postgres.term(overText, true)), 400, 'PostgreSQL refuses a text argument');
      t.equal(refused(() => clickhouse.operand(overText, true)), 400, 'ClickHouse refuses a text argument');
    } else {
      t.equal(refused(() => postgres.term(overText, true)), null, 'PostgreSQL takes a text argument');
      t.equal(refused(() => clickhouse.operand(overText, true)), null, 'ClickHouse takes a text argument');
    }
    t.equal(refused(() => postgres.term(overMoney, false)), 400, 'not allowed outside fields');
    const overRollup = new ClickHouseCompiler(transactionShape, 'v1', undefined, COLUMN_BY_STORE, ROLLUP).operand(overMoney, true);
    t.match(overRollup.exact?.sql ?? overRollup.sql, /amount_(count|sum|squares|min|max)/, 'over the rollup it reads the partial columns');
    t.notMatch(overRollup.exact?.sql ?? overRollup.sql, /\bamount\b/, 'and never the rows\' amount');
  });
}

t.test('a name not in the table is no aggregate to either store', async (t) => {
  const unknown = term('median(amount)');
  t.equal(refused(() => new SqlCompiler(transactionShape, 'v1').term(unknown, true)), 400);
  t.equal(refused(() => new ClickHouseCompiler(transactionShape, 'v1').operand(unknown, true)), 400);
});

t.test('over the rollup, what it does not keep is NotCovered (the report then reads the table)', async (t) => {
  const rollup = () => new ClickHouseCompiler(transactionShape, 'v1', undefined, COLUMN_BY_STORE, ROLLUP);
  for (const fields of ['sum(abs(amount))', 'count(description)', 'min(created_at)', 'avg(hour(created_at))', 'stddev(month(created_at))']) {
    t.throws(() => rollup().operand(term(fields), true), NotCovered, fields);
  }
  t.equal(rollup().operand(term('max(month(created_at))'), true).sql, 'if(sumIf(n, isNotNull(toMonth(toDateTime64(day, 6, \'UTC\')))) > 0, max(toMonth(toDateTime64(day, 6, \'UTC\'))), NULL)',
    'a function of the day alone is kept');
});

t.test('over the rollup\'s months, a function of the day finer than its month is NotCovered (the days answer it)', async (t) => {
  const months = () => new ClickHouseCompiler(transactionShape, 'v1', undefined, COLUMN_BY_STORE, ROLLUP.coarser);
  for (const fields of ['max(day(created_at))', 'min(date(created_at))', 'max(dayofweek(created_at))', 'max(year(date(created_at)))']) {
    t.throws(() => months().operand(term(fields), true), NotCovered, fields);
    t.doesNotThrow(() => new ClickHouseCompiler(transactionShape, 'v1', undefined, COLUMN_BY_STORE, ROLLUP).operand(term(fields), true), `the days keep ${fields}`);
  }
  for (const fields of ['max(year(created_at))', 'min(month(created_at))', 'max(monthname(created_at))', 'max(last_day(created_at))', 'sum(amount)']) {
    t.doesNotThrow(() => months().operand(term(fields), true), `the months keep ${fields}`);
  }
});
