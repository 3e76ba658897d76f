/**
 * One AST for every way a client asks for rows: query-string filters (`amount=>100`) and the
 * `q` language (`amount > 100 && status.value == "processed"`) both parse into `Expr`; the
 * Postgres compiler (api/query/toSql.ts) and later the ClickHouse compiler read it.
 * Literals stay untyped here; a compiler types them against the field's declared schema.
 */

/** A field path as the client wrote it, e.g. ['status', 'value'] or ['attrs', 'region']. */
export interface FieldRef {
  kind: 'field';
  path: string[];
  pos: number;
}

/** A function applied to a field or expression: month(created_at), lower(name), sum(amount). */
export interface Call {
  kind: 'call';
  fn: string;
  args: Operand[];
  pos: number;
}

/** A literal. `fromString` marks values that came from a query string or a quoted q string:
 *  the compiler may coerce them to the field's type ("100" → 100 for a number field). */
export interface Literal {
  kind: 'literal';
  value: string | number | boolean | null;
  fromString: boolean;
  /** a number's digits as written (`1.005`), for amounts, which are decimals and never floats */
  text?: string;
  pos: number;
}

/** `date(2024-01-31)` / `date(2024-01-31 10:00:00)` in q: an explicit timestamp literal. */
export interface DateLiteral {
  kind: 'date';
  value: string;
  pos: number;
}

export type Operand = FieldRef | Call | Literal | DateLiteral;

/** `?` is LIKE with `*` as the wildcard. */
export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=' | '?';

export interface Compare {
  kind: 'cmp';
  op: CompareOp;
  left: Operand;
  right: Operand;
  pos: number;
}

export interface Junction {
  kind: 'and' | 'or';
  items: Expr[];
  pos: number;
}

export interface Not {
  kind: 'not';
  expr: Expr;
  pos: number;
}

/** A bare operand used as a condition, e.g. `q=is_active` (truthy field). */
export interface Truthy {
  kind: 'truthy';
  operand: Operand;
  pos: number;
}

export type Expr = Compare | Junction | Not | Truthy;

export type SortDirection = 'asc' | 'desc';

export interface OrderTerm {
  expr: Operand;
  direction: SortDirection;
  /** the text as requested, e.g. "desc(created_at)" */
  source: string;
}

export interface SelectTerm {
  /** null for `*` (the default fields) */
  expr: Operand | null;
  /** the expression exactly as requested, used as the result key (`sum(amount)`) */
  source: string;
}

/** Everything the query string of a request asks for, parsed but not yet checked against a schema. */
export interface ListQuery {
  where: Expr | null;
  fields: SelectTerm[] | null;
  groupBy: SelectTerm[];
  orderBy: OrderTerm[];
  limit: number;
  offset: number;
  /** `mode=query` present */
  queryMode: boolean;
  /** `format=csv|parquet` (or `Accept: text/csv`): an export instead of a JSON list */
  format: ExportFormat;
  /** whether the client named a `limit` (an export without one holds every matching row) */
  limitGiven: boolean;
}

export type ExportFormat = 'json' | 'csv' | 'parquet';
