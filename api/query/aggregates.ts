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

/**
 * The primitive aggregates ClickHouse forms are written in, over one argument: over the rows
 * themselves (`rowPartials`), or over a pre-aggregated table's partial columns (the reporting
 * rollup, reporting/columns.ts), so one form serves both.
 */
export interface Partials {
  /** how many values are not null */
  count: () => string;
  sum: () => string;
  /** the sum in Int128: exact for money squares and big totals */
  sumWide: () => string;
  /** the sum of squares in Int128 (money) */
  squares: () => string;
  min: () => string;
  max: () => string;
  /** statistics of plain numbers, as floats */
  avg: () => string;
  stddevSamp: () => string;
  varSamp: () => string;
}

/** The partials of `x` over the rows themselves. */
export function rowPartials(x: string): Partials {
  return {
    count: () => `count(${x})`,
    sum: () => `sum(${x})`,
    sumWide: () => `sum(toInt128(${x}))`,
    squares: () => `sum(toInt128(${x}) * ${x})`,
    min: () => `min(${x})`,
    max: () => `max(${x})`,
    avg: () => `avg(${x})`,
    stddevSamp: () => `stddevSamp(${x})`,
    varSamp: () => `varSamp(${x})`,
  };
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
  /** ClickHouse over the argument's partials, and over money the exact form */
  clickhouse: (p: Partials) => string;
  clickhouseMoney?: (p: Partials) => ExactMoney;
}

/** ClickHouse answers 0 for an aggregate over no values where PostgreSQL answers NULL. */
const some = (p: Partials, sql: string) => `if(${p.count()} > 0, ${sql}, NULL)`;

const minorToMajor = (raw: unknown): number => Number(BigInt(String(raw))) / 100;

/** [count, sum as text, sum of squares as text] of minor units → the sample variance in minor units squared. */
function sampleVarianceMinor(raw: unknown): number | null {
  const [count, sum, squares] = raw as [number | string, string, string];
  const n = BigInt(count);
  if (n < 2n) return null;
  // (n·Σx² − (Σx)²) / (n(n−1)): the numerator exact, so no cancellation.
  return Number(n * BigInt(squares) - BigInt(sum) ** 2n) / Number(n * (n - 1n));
}

const squaresSql = (p: Partials) => `tuple(${p.count()}, toString(${p.sumWide()}), toString(${p.squares()}))`;

/** A PostgreSQL statistic of money over double precision (numeric keeps too few digits for a square root to the cent). */
const statistic = (fn: string, divisor: string) => (x: string, money: boolean) => (money ? `${fn}((${x})::float8) / ${divisor}` : `${fn}(${x})`);

function extreme(fn: 'min' | 'max'): AggregateFunction {
  return {
    numeric: false,
    answers: 'argument',
    postgres: (x) => `${fn}(${x})`,
    clickhouse: (p) => some(p, p[fn]()),
    clickhouseMoney: (p) => ({ sql: some(p, `toString(${p[fn]()})`), decode: minorToMajor }),
  };
}

export const AGGREGATE_FUNCTIONS: Readonly<Record<string, AggregateFunction>> = {
  count: { numeric: false, answers: 'count', postgres: (x) => `count(${x})`, clickhouse: (p) => p.count() },
  min: extreme('min'),
  max: extreme('max'),
  sum: {
    numeric: true,
    answers: 'sum',
    postgres: (x) => `sum(${x})`,
    clickhouse: (p) => some(p, p.sum()),
    clickhouseMoney: (p) => ({ sql: some(p, `toString(${p.sum()})`), decode: minorToMajor }),
  },
  avg: {
    numeric: true,
    answers: 'statistic',
    postgres: statistic('avg', '100.0'),
    clickhouse: (p) => p.avg(),
    clickhouseMoney: (p) => ({
      sql: `tuple(toString(${p.sum()}), ${p.count()})`,
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
    clickhouse: (p) => p.stddevSamp(),
    clickhouseMoney: (p) => ({ sql: squaresSql(p), decode: (raw) => { const v = sampleVarianceMinor(raw); return v === null ? null : Math.sqrt(v) / 100; } }),
  },
  variance: {
    numeric: true,
    answers: 'statistic',
    postgres: statistic('var_samp', '10000.0'),
    clickhouse: (p) => p.varSamp(),
    clickhouseMoney: (p) => ({ sql: squaresSql(p), decode: (raw) => { const v = sampleVarianceMinor(raw); return v === null ? null : v / 10_000; } }),
  },
};

/** The names of the aggregate functions, lower case. */
export const AGGREGATES: ReadonlySet<string> = new Set(Object.keys(AGGREGATE_FUNCTIONS));

/** Money exact in ClickHouse: a grouped money value (a group key) travels as text too. */
export function exactMoneyColumn(sql: string): ExactMoney {
  return { sql: `toString(${sql})`, decode: minorToMajor };
}
