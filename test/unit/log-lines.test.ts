/**
 * Unit tier: the lines `settle up` prints (bin/logLines.ts), fed with records our own logger
 * (api/logger.ts) writes, as the processes write them.
 */
import t from 'tap';
import { createLogger } from '../../api/logger.ts';
import { chooseLineView, formatLogRecord, readableLines, type LogRecord } from '../../bin/logLines.ts';

process.env.TZ = 'UTC';

/** A logger of process `name` and the records it has written. */
function recording(name: string, level = 'trace') {
  const lines: string[] = [];
  const log = createLogger(level, name, { write: (line: string) => void lines.push(line) });
  return { log, lines, records: () => lines.map((line) => JSON.parse(line) as LogRecord) };
}

const clock = (record: LogRecord) => new Date(record.time).toISOString().slice(11, 19);
const ESCAPE = /\x1b\[/;

t.test('a request is its time, process, level, method, path, status and milliseconds; its ids stay in the JSON', async (t) => {
  const { log, records } = recording('web');
  const request = log.child({ req: '84280ac1-3a29-4362-8b3c-75dfa492c13f' }).child({ org: 'org_imBwSgZeBXqhNBcx14HN0i3b', env: 'test' });
  request.info({ method: 'GET', path: '/customers', status: 200, ms: 73 }, 'request');
  const [record] = records();
  t.equal(formatLogRecord(record, { colour: false }), `${clock(record)} web       INFO  request GET /customers 200 73 ms`);
});

t.test("an error's message ends the line, whether logged as text or as an Error", async (t) => {
  const { log, records } = recording('worker');
  log.warn({ err: 'terminating connection due to administrator command' }, 'worker database connection lost');
  log.error({ err: new Error('ClickHouse is unreachable') }, 'mirror failing');
  log.error(new Error('lost the mirror lock'));
  const [text, thrown, bare] = records().map((record) => formatLogRecord(record, { colour: false }));
  t.match(text, /^\d\d:\d\d:\d\d worker    WARN  worker database connection lost err: terminating connection due to administrator command$/);
  t.match(thrown, /ERROR mirror failing err: ClickHouse is unreachable$/);
  t.notMatch(thrown, /at .*log-lines/, 'no stack');
  t.match(bare, /ERROR lost the mirror lock$/, 'a message already in the line is not repeated');
});

t.test("a job's task and id are shown, graphile-worker's worker id and the job row are not", async (t) => {
  const { log, records } = recording('worker');
  // as workers/main.ts passes graphile-worker's scope and meta on
  log.info({ label: 'job', workerId: 'worker-7c1f', taskIdentifier: 'deliver_webhook', jobId: '42', job: { id: '42', payload: { event: 'evt_1' } }, duration: 15.2 }, 'Completed task 42 (deliver_webhook, 15.20ms) with success');
  const line = formatLogRecord(records()[0], { colour: false });
  t.match(line, /INFO  Completed task 42 \(deliver_webhook, 15.20ms\) with success task=deliver_webhook job=42 duration=15.2$/);
  t.notMatch(line, /worker-7c1f|evt_1/);
});

t.test('other plain fields follow as key=value, text with spaces quoted', async (t) => {
  const { log, records } = recording('reporting');
  log.info({ rows: 0, copyMs: 12, position: '896:896:', clickhouse: 'embedded chdb in /tmp/x' }, 'mirror rebuilt');
  t.match(formatLogRecord(records()[0], { colour: false }), /reporting INFO  mirror rebuilt rows=0 copyMs=12 position=896:896: clickhouse="embedded chdb in \/tmp\/x"$/);
});

t.test('levels are coloured only when asked, each in its own colour', async (t) => {
  const { log, records } = recording('web');
  log.info('web listening');
  log.warn('slow');
  log.error('failed');
  const [info, warn, error] = records();
  t.notMatch(formatLogRecord(info, { colour: false }), ESCAPE);
  const coloured = [info, warn, error].map((record) => formatLogRecord(record, { colour: true }));
  t.match(coloured[0], /\x1b\[32mINFO \x1b\[0m web listening$/);
  t.match(coloured[1], /\x1b\[33mWARN \x1b\[0m slow$/);
  t.match(coloured[2], /\x1b\[31mERROR\x1b\[0m failed$/);
});

t.test('readable lines format JSON records and time and label any other line', async (t) => {
  const { log, lines } = recording('worker');
  log.info({ concurrency: 10 }, 'worker running');
  const view = readableLines(false, () => new Date('2026-11-25T20:21:07Z'));
  t.match(view('worker', lines[0].trimEnd()), /^\d\d:\d\d:\d\d worker    INFO  worker running concurrency=10$/);
  t.equal(view('worker', 'SIGTERM received, draining'), '20:21:07 worker          SIGTERM received, draining');
  t.equal(view('settle', '{not json'), '20:21:07 settle          {not json');
});

t.test('LOG_FORMAT and the terminal choose the view: short lines in a terminal, labelled JSON elsewhere', async (t) => {
  const { log, lines } = recording('web');
  log.info({ url: 'http://127.0.0.1:8080' }, 'web listening');
  const line = lines[0].trimEnd();
  const terminal = { isTTY: true };
  const pipe = { isTTY: false };
  t.match(chooseLineView({}, terminal)('web', line), /^\d\d:\d\d:\d\d web       \x1b\[32mINFO \x1b\[0m web listening url=http:\/\/127.0.0.1:8080$/, 'a terminal: short lines, level in colour');
  t.equal(chooseLineView({}, pipe)('web', line), `web      | ${line}`, 'a pipe: the record as written');
  t.equal(chooseLineView({ LOG_FORMAT: 'json' }, terminal)('web', line), `web      | ${line}`, 'LOG_FORMAT=json in a terminal');
  const forced = chooseLineView({ LOG_FORMAT: 'pretty' }, pipe)('web', line);
  t.match(forced, /^\d\d:\d\d:\d\d web       INFO  web listening/, 'LOG_FORMAT=pretty into a pipe');
  t.notMatch(forced, ESCAPE, 'without colour off a terminal');
  t.notMatch(chooseLineView({ NO_COLOR: '1' }, terminal)('web', line), ESCAPE, 'NO_COLOR');
  t.throws(() => chooseLineView({ LOG_FORMAT: 'yaml' }, pipe), /LOG_FORMAT must be pretty or json, got "yaml"/);
});
