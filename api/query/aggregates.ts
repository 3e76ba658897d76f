/**
 * The aggregate functions of `fields` (CONTRACT §6), one entry each: what it takes, what it
 * answers, and its SQL for both stores — PostgreSQL (api/query/toSql.ts) and the reporting
 * process's ClickHouse (reporting/compiler.ts) — so a new aggregate is one entry here and both
 * answer it alike.
 *
 * Money is stored in minor units. A sum, minimum or maximum of money is exact cents; an average,
 * standard deviation or variance of money is a plain number in major units (squared for the
 * variance), never rounded to the cent. ClickHouse computes money from exact integer sums that
 * travel as text and are decoded here (`exact`).
 */

/** A money aggregate's ClickHouse expression that travels exactly, and how its value becomes major units. */
export interface ExactMoney {
  sql: string;
  decode: (raw: unknown) => number | null;
}

export interface AggregateFunction {
  /** takes numbers only; otherwise any comparable value (min, max) or any value (count) */
  numeric: boolean;
  /**
   * What it answers: a count; the argument's own kind (min, max: a money minimum is money); the
   * argument's sum (money for money); or a statistic (a plain number, in major units for money).
   */
  answers: 'count' | 'argument' | 'sum' | 'statistic';
  /** PostgreSQL over the argument `x`; `money`: `x` is minor units */
  postgres: (x: string, money: boolean) => string;
  /** ClickHouse over the argument `x`, and over money the exact form */
  clickhouse: (x: string) => string;
  clickhouseMoney?: (x: string) => ExactMoney;
}

/** ClickHouse answers 0 for an aggregate over no values where PostgreSQL answers NULL. */
const some = (x: string, sql: string) => `if(count(${x}) > 0, ${sql}, NULL)`;

const minorToMajor = (raw: unknown): number => Number(BigInt(String(raw))) / 100;

/** [count, sum as text, sum of squares as text] of minor units → the sample variance in minor units squared. */
function sampleVarianceMinor(raw: unknown): number | null {
  const [count, sum, squares] = raw as [number | string, string, string];
  const n = BigInt(count);
  if (n < 2n) return null;
  // (n·Σx² − (Σx)²) / (n(n−1)): the numerator exact, so no cancellation.
  return Number(n * BigInt(squares) - BigInt(sum) ** 2n) / Number(n * (n - 1n));
}

const squaresSql = (x: string) => `tuple(count(${x}), toString(sum(toInt128(${x}))), toString(sum(toInt128(${x}) * ${x})))`;

/** A PostgreSQL statistic of money over double precision (numeric keeps too few digits for a square root to the cent). */
const statistic = (fn: string, divisor: string) => (x: string, money: boolean) => (money ? `${fn}((${x})::float8) / ${divisor}` : `${fn}(${x})`);

function extreme(fn: 'min' | 'max'): AggregateFunction {
  return {
    numeric: false,
    answers: 'argument',
    postgres: (x) => `${fn}(${x})`,
    clickhouse: (x) => some(x, `${fn}(${x})`),
    clickhouseMoney: (x) => ({ sql: some(x, `toString(${fn}(${x}))`), decode: minorToMajor }),
  };
}

export const AGGREGATE_FUNCTIONS: Readonly<Record<string, AggregateFunction>> = {
  count: { numeric: false, answers: 'count', postgres: (x) => `count(${x})`, clickhouse: (x) => `count(${x})` },
  min: extreme('min'),
  max: extreme('max'),
  sum: {
    numeric: true,
    answers: 'sum',
    postgres: (x) => `sum(${x})`,
    clickhouse: (x) => some(x, `sum(${x})`),
    clickhouseMoney: (x) => ({ sql: some(x, `toString(sum(${x}))`), decode: minorToMajor }),
  },
  avg: {
    numeric: true,
    answers: 'statistic',
    postgres: statistic('avg', '100.0'),
    clickhouse: (x) => `avg(${x})`,
    clickhouseMoney: (x) => ({
      sql: `tuple(toString(sum(${x})), count(${x}))`,
      decode: (raw) => {
        const [sum, count] = raw as [string, number | string];
        const n = BigInt(count);
        return n === 0n ? null : Number(BigInt(sum)) / Number(n) / 100;
      },
    }),
  },
  stddev: {
    numeric: true,
    answers: 'statistic',
    postgres: statistic('stddev_samp', '100.0'),
    clickhouse: (x) => `stddevSamp(${x})`,
    clickhouseMoney: (x) => ({ sql: squaresSql(x), decode: (raw) => { const v = sampleVarianceMinor(raw); return v === null ? null : Math.sqrt(v) / 100; } }),
  },
  variance: {
    numeric: true,
    answers: 'statistic',
    postgres: statistic('var_samp', '10000.0'),
    clickhouse: (x) => `varSamp(${x})`,
    clickhouseMoney: (x) => ({ sql: squaresSql(x), decode: (raw) => { const v = sampleVarianceMinor(raw); return v === null ? null : v / 10_000; } }),
  },
};

/** The names of the aggregate functions, lower case. */
export const AGGREGATES: ReadonlySet<string> = new Set(Object.keys(AGGREGATE_FUNCTIONS));

/** Money exact in ClickHouse: a grouped money value (a group key) travels as text too. */
export function exactMoneyColumn(sql: string): ExactMoney {
  return { sql: `toString(${sql})`, decode: minorToMajor };
}
