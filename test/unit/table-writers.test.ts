/**
 * Unit tier: who writes each table that holds a family's rows. A family's own folder (the one
 * whose declaration names the table) writes it; any other writer is data (./table-writers.json),
 * read by this test, not a comment, in three lists of table → file → why it writes there: `own`,
 * the family's own writers that live outside its folder (the webhook family's delivery worker
 * recording its attempts); `composed`, another family's statement that runs the owning family's
 * own insert (a CTE text and bindings exported by its folder) and has no SQL of its own on the
 * table (a payment's statement storing its inline method); and `bypass`, writes that go past the
 * family's door and are to move behind it. A new file outside the folder that inserts into,
 * updates or deletes from the table fails here until it is entered with its reason, and an entry
 * whose file no longer writes the table fails too, so the bypass list shrinks as writes move
 * behind their family's door. Read from the source text: SQL that names the table,
 * the generic row writers (api/db/objects.ts, which writes the table it is given) called with
 * its name, and functions of the family's folder that write it, imported and called elsewhere.
 * A fourth list, `sqlUpdates`, names the files of a family's own folder that change its stored
 * rows by their own SQL update rather than through the family's update (`updateNested`). A fifth,
 * `notChanges`, names the files outside the door that update any family's table by a table named
 * in a template, each with why what it writes is no change of an object (and so passes no door).
 * A sixth, `functions`, names the database functions that change or delete a family's rows, read
 * by a test against the migrated schema (test/system-changes.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { projectRoot } from '../../api/config.ts';
import { families } from '../../api/families/index.ts';

type Writers = Record<string, Record<string, string>>;
const lists = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'table-writers.json'), 'utf8')) as { own: Writers; composed: Writers; bypass: Writers; sqlUpdates: Writers; notChanges: Record<string, string>; functions: Writers };
const listedFor = (table: string) => [lists.own, lists.composed, lists.bypass].flatMap((list) => Object.keys(list[table] ?? {}));

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(projectRoot, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => path.posix.join(dir, name.split(path.sep).join('/')));
}

/** A file's code without its comment lines. */
function code(file: string): string {
  return fs.readFileSync(path.join(projectRoot, file), 'utf8').split('\n').filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line)).join('\n');
}

const sources = ['api', 'workers', 'reporting', 'bin'].flatMap(sourceFiles).map((file) => ({ file, text: code(file) }));

function writesTable(text: string, table: string): boolean {
  const sql = new RegExp(`\\b(insert\\s+into|update|delete\\s+from)\\s+"?${table}"?(\\s|\\(|$)`, 'i');
  const generic = new RegExp(`\\b(insertObjects|updateObjects|deleteObjects)\\([^)]*'${table}'`);
  return sql.test(text) || generic.test(text);
}

/** The exported functions of a file, each with its text (up to the next top-level declaration). */
function exportedFunctions(text: string): Array<{ name: string; body: string }> {
  const starts = [...text.matchAll(/^export (?:async )?function (\w+)/gm)];
  return starts.map((match, i) => {
    const rest = text.slice(match.index!);
    const end = rest.slice(1).search(/^(export |function |async function |const |interface |type )/m);
    return { name: match[1], body: end < 0 ? rest : rest.slice(0, end + 1) };
  });
}

/**
 * Files that write the table: by their own SQL or generic writer call, or by calling a function
 * of the table's family folder that writes it (`insertItems` imported from the invoices' repository
 * writes invoice_items wherever it is called).
 */
function writersOf(table: string, own: string): string[] {
  return sources.filter(({ file, text }) => writesTable(text, table) || callsWriter(table, own, file, text)).map(({ file }) => file).sort();
}

/** True when `file` imports a function of the `own` folder that writes the table. */
function callsWriter(table: string, own: string, file: string, text: string): boolean {
  const writerFunctions = sources.filter(({ file: ownFile }) => ownFile.startsWith(own))
    .flatMap(({ file: ownFile, text: ownText }) => exportedFunctions(ownText).filter(({ body }) => writesTable(body, table)).map(({ name }) => ({ file: ownFile, name })));
  return writerFunctions.some((writer) => {
    const from = path.posix.relative(path.posix.dirname(file), writer.file).replace(/^(?!\.)/, './');
    const imported = new RegExp(`import\\s*\\{[^}]*\\b${writer.name}\\b[^}]*\\}\\s*from\\s*'${from.replace(/\./g, '\\.')}'`);
    return imported.test(text);
  });
}

const tables = [...new Set(families.map((family) => family.table))].sort();

/** The folder under api/families/ whose declaration names the table (`table: 'widgets'`). */
function ownFolder(table: string): string {
  const declaring = sources.filter(({ file, text }) => file.startsWith('api/families/') && text.includes(`table: '${table}'`));
  const folders = [...new Set(declaring.map(({ file }) => file.split('/').slice(0, 3).join('/')))];
  if (folders.length !== 1) throw new Error(`${table} is declared in ${folders.length} family folders: ${folders.join(', ')}`);
  return `${folders[0]}/`;
}

t.test('the lists name only tables that hold a family\'s rows, and a file once per table', async (t) => {
  t.same([lists.own, lists.composed, lists.bypass, lists.functions].flatMap(Object.keys).filter((table) => !tables.includes(table)), []);
  for (const table of tables) t.same(listedFor(table).filter((file, i, all) => all.indexOf(file) !== i), [], table);
});

for (const table of tables) {
  t.test(`${table}: written by its family's folder and the files listed for it, each of which still writes it`, async (t) => {
    const own = ownFolder(table);
    const others = writersOf(table, own).filter((file) => !file.startsWith(own));
    t.same(others, listedFor(table).sort());
  });
}

t.test('a composed write runs the owning family\'s insert and has no SQL of its own on the table', async (t) => {
  for (const [table, files] of Object.entries(lists.composed)) {
    const own = ownFolder(table);
    for (const file of Object.keys(files)) {
      const text = sources.find((source) => source.file === file)?.text ?? '';
      t.notOk(writesTable(text, table), `${file} writes ${table} by its own SQL`);
      t.ok(callsWriter(table, own, file, text), `${file} runs an insert of ${own}`);
    }
  }
});

t.test('operation rows are recorded by the transaction family only: every step is a transaction\'s, written with the change that makes it', async (t) => {
  const recorders = sources.filter(({ text }) => /import\s*\{[^}]*\brecordOperations\b[^}]*\}\s*from/.test(text)).map(({ file }) => file);
  t.same(recorders.filter((file) => !file.startsWith('api/families/transactions/')), []);
});

t.test('no family folder writes a table named by a template: such a write could reach any family\'s rows past its door, unseen by these lists', async (t) => {
  const templated = /\b(insert\s+into|update|delete\s+from)\s+\$\{/i;
  t.same(sources.filter(({ file, text }) => file.startsWith('api/families/') && templated.test(text)).map(({ file }) => file), []);
});

t.test('in its own folder, a family changes its stored rows by SQL update only where listed (`sqlUpdates`): elsewhere through its update', async (t) => {
  for (const table of tables) {
    const own = ownFolder(table);
    const sql = new RegExp(`\\bupdate\\s+"?${table}"?(\\s|$)`, 'i');
    const updaters = sources.filter(({ file, text }) => file.startsWith(own) && sql.test(text)).map(({ file }) => file);
    t.same(updaters.sort(), Object.keys(lists.sqlUpdates[table] ?? {}).sort(), table);
  }
});

/** The door's own writers, which update the table they are given (api/db/auditedChanges.ts). */
const DOOR = ['api/db/auditedChanges.ts'];

t.test('a file that updates a table named by a template is the door or is listed as writing no change (`notChanges`), unaudited by its own mark', async (t) => {
  const templated = /\bupdate\s+\$\{[^}]+\}(\s+\w+)?\s+set\b/i;
  const updaters = sources.filter(({ file, text }) => templated.test(text) && !DOOR.includes(file)).map(({ file }) => file);
  t.same(updaters.sort(), Object.keys(lists.notChanges).sort());
  for (const file of updaters) t.match(sources.find((source) => source.file === file)!.text, /ownAuditSql\(/, `${file} marks its statement audited by itself, so no trigger audits it`);
});
