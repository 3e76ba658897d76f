/**
 * Unit tier: who writes each table that holds a family's rows. A family's own folder (the one
 * whose declaration names the table) writes it; any other writer is data (./table-writers.json:
 * table → file → why it writes there), read by this test, not a comment: a new file outside the
 * folder that inserts into, updates or deletes from the table fails here until it is entered with
 * its reason, and an entry whose file no longer writes the table fails too, so the list shrinks as
 * writes move behind their family's door. Read from the source text: SQL that names the table,
 * and the generic row writers (api/db/objects.ts, which writes the table it is given) called with
 * its name.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { projectRoot } from '../../api/config.ts';
import { families } from '../../api/families/index.ts';

const allowed = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'table-writers.json'), 'utf8')) as Record<string, Record<string, string>>;

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

function writersOf(table: string): string[] {
  const sql = new RegExp(`\\b(insert\\s+into|update|delete\\s+from)\\s+"?${table}"?(\\s|\\(|$)`, 'i');
  const generic = new RegExp(`\\b(insertObjects|updateObjects|deleteObjects)\\([^)]*'${table}'`);
  return sources.filter(({ text }) => sql.test(text) || generic.test(text)).map(({ file }) => file).sort();
}

const tables = [...new Set(families.map((family) => family.table))].sort();

/** The folder under api/families/ whose declaration names the table (`table: 'widgets'`). */
function ownFolder(table: string): string {
  const declaring = sources.filter(({ file, text }) => file.startsWith('api/families/') && text.includes(`table: '${table}'`));
  const folders = [...new Set(declaring.map(({ file }) => file.split('/').slice(0, 3).join('/')))];
  if (folders.length !== 1) throw new Error(`${table} is declared in ${folders.length} family folders: ${folders.join(', ')}`);
  return `${folders[0]}/`;
}

t.test('the list names only tables that hold a family\'s rows', async (t) => {
  t.same(Object.keys(allowed).filter((table) => !tables.includes(table)), []);
});

for (const table of tables) {
  t.test(`${table}: written by its family's folder and the files listed for it, each of which still writes it`, async (t) => {
    const own = ownFolder(table);
    const others = writersOf(table).filter((file) => !file.startsWith(own));
    t.same(others, Object.keys(allowed[table] ?? {}).sort());
  });
}
