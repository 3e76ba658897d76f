/**
 * What `settle up` prints: every line of its children and its own, labelled with its source. In a
 * terminal the children's pino records (api/logger.ts) become short lines a person reads —
 * `12:04:05 web       INFO  request GET /customers 200 73 ms` — with the level in colour; into a
 * file or a pipe each line goes as written, JSON records included, behind its label.
 */

/** Turns one line from `source` (`web`, `worker`, `reporting`, `settle`, …) into the line printed. */
export type LineView = (source: string, line: string) => string;

/** LOG_FORMAT: `pretty` (short lines) or `json` (records as written). Default: pretty when stdout is a terminal. */
export const LOG_FORMATS = ['pretty', 'json'] as const;

/** The source column is as wide as the longest process name, `reporting`. */
const SOURCE_WIDTH = 9;

/** `web      | {"level":30,…}`: the line as written. */
export const labelledLines: LineView = (source, line) => source.padEnd(SOURCE_WIDTH) + '| ' + line;

/** A pino record as api/logger.ts writes it: its own fields, then whatever the call site added. */
export interface LogRecord {
  level: number;
  time: number;
  name?: string;
  msg?: string;
  [field: string]: unknown;
}

const LEVELS: Record<number, { label: string; colour: string }> = {
  10: { label: 'TRACE', colour: '\x1b[90m' },
  20: { label: 'DEBUG', colour: '\x1b[90m' },
  30: { label: 'INFO', colour: '\x1b[32m' },
  40: { label: 'WARN', colour: '\x1b[33m' },
  50: { label: 'ERROR', colour: '\x1b[31m' },
  60: { label: 'FATAL', colour: '\x1b[1;31m' },
};
const RESET = '\x1b[0m';
const LEVEL_WIDTH = 5;

/**
 * Fields the short line leaves out: the time, process and level have columns; ids that only
 * correlate lines (request, org, graphile-worker's worker) and whole rows (a failed job's `job`)
 * stay in the JSON.
 */
const LEFT_OUT = new Set(['level', 'time', 'name', 'msg', 'pid', 'hostname', 'req', 'org', 'env', 'client', 'label', 'workerId', 'job']);

function clock(time: Date): string {
  return [time.getHours(), time.getMinutes(), time.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

function levelColumn(level: number, colour: boolean): string {
  const known = LEVELS[level];
  const label = (known?.label ?? String(level)).padEnd(LEVEL_WIDTH);
  return colour && known ? known.colour + label + RESET : label;
}

/** An error field is a message (`err: error.message`), pino's serialized Error, or a driver's error object. */
function errorMessage(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { message?: unknown }).message === 'string') return (value as { message: string }).message;
  return undefined;
}

function shownValue(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' || /\s|"/.test(value) ? JSON.stringify(value) : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/**
 * What follows the message: a request's method, path, status and time; a job's task and id; other
 * plain fields as key=value; last the error's message.
 */
function details(record: LogRecord): string[] {
  const parts: string[] = [];
  const handled = new Set(LEFT_OUT);
  const { method, path, status, ms } = record;
  if (typeof method === 'string' && typeof path === 'string') {
    parts.push(`${method} ${path}`);
    if (status !== undefined) parts.push(String(status));
    if (typeof ms === 'number') parts.push(`${ms} ms`);
    for (const key of ['method', 'path', 'status', 'ms']) handled.add(key);
  }
  for (const [key, shownAs] of [['taskIdentifier', 'task'], ['jobId', 'job']] as const) {
    if (record[key] !== undefined) parts.push(`${shownAs}=${String(record[key])}`);
    handled.add(key);
  }
  const errors = ['err', 'error'].flatMap((key) => {
    handled.add(key);
    const message = errorMessage(record[key]);
    // pino's `log.error(error)` makes the message the record's msg already
    return message && message !== record.msg ? [`${key}: ${message}`] : [];
  });
  for (const [key, value] of Object.entries(record)) {
    const text = handled.has(key) ? undefined : shownValue(value);
    if (text !== undefined) parts.push(`${key}=${text}`);
  }
  return [...parts, ...errors];
}

/** One record as one short line: time, process, level, message, the fields that matter. */
export function formatLogRecord(record: LogRecord, options: { colour: boolean; source?: string }): string {
  const source = (options.source ?? record.name ?? '').padEnd(SOURCE_WIDTH);
  const message = [record.msg ?? '', ...details(record)].filter(Boolean).join(' ');
  return `${clock(new Date(record.time))} ${source} ${levelColumn(record.level, options.colour)} ${message}`;
}

function asRecord(line: string): LogRecord | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as Partial<LogRecord> | null;
    return parsed && typeof parsed.level === 'number' && typeof parsed.time === 'number' ? (parsed as LogRecord) : undefined;
  } catch {
    return undefined;
  }
}

/** Records as short lines; any other line (a plain message, a stack trace) timed now and labelled. */
export function readableLines(colour: boolean, now: () => Date = () => new Date()): LineView {
  return (source, line) => {
    const record = asRecord(line);
    if (record) return formatLogRecord(record, { colour, source });
    return `${clock(now())} ${source.padEnd(SOURCE_WIDTH)} ${''.padEnd(LEVEL_WIDTH)} ${line}`;
  };
}

/** The view LOG_FORMAT asks for, else the one that suits where stdout goes. Colour only on a terminal, and not under NO_COLOR. */
export function chooseLineView(env: NodeJS.ProcessEnv, stdout: { isTTY?: boolean }): LineView {
  const format = env.LOG_FORMAT || (stdout.isTTY ? 'pretty' : 'json');
  if (!(LOG_FORMATS as readonly string[]).includes(format)) throw new Error(`LOG_FORMAT must be ${LOG_FORMATS.join(' or ')}, got "${format}"`);
  if (format === 'json') return labelledLines;
  return readableLines(Boolean(stdout.isTTY) && !env.NO_COLOR);
}
