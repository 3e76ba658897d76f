/**
 * Unit tier: the process layers. The worker and reporting processes take the domain, the
 * repositories and the shared process code (api/process.ts, api/config.ts); nothing of theirs may
 * reach the web process's HTTP layer (api/http/) or its entry point (api/server.ts), directly or
 * through another module. Inside api/, dependencies point down: the repositories (api/db/) take
 * nothing from the engine or the web layer, the field schema (api/schema/) sits below both the
 * query compiler and the engine, no module imports itself back through others, and api/ takes no
 * code from the reporting or worker processes. Read from the source text, so the rules hold before
 * anything runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { projectRoot } from '../../api/config.ts';

const WEB_ONLY = (file: string) => file.startsWith('api/http/') || file === 'api/server.ts';

// `import … from '…'`, `export … from '…'` (also `import type`, over several lines), `import '…'`, `import('…')`.
const SPECIFIER = /^\s*(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;

function relativeImports(file: string): string[] {
  const text = fs.readFileSync(path.join(projectRoot, file), 'utf8');
  return [...text.matchAll(SPECIFIER)]
    .map((m) => m[1] ?? m[2] ?? m[3])
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)));
}

/** Every file reachable from `roots` through relative imports, each with the file that first imported it. */
function importGraph(roots: string[]): Map<string, string | null> {
  const importedBy = new Map<string, string | null>(roots.map((root) => [root, null]));
  const queue = [...roots];
  while (queue.length) {
    const file = queue.shift()!;
    for (const target of relativeImports(file)) {
      if (importedBy.has(target) || !fs.existsSync(path.join(projectRoot, target))) continue;
      importedBy.set(target, file);
      queue.push(target);
    }
  }
  return importedBy;
}

function chain(graph: Map<string, string | null>, file: string): string {
  const steps = [file];
  for (let from = graph.get(file); from; from = graph.get(from)) steps.unshift(from);
  return steps.join(' → ');
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(projectRoot, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => path.posix.join(dir, name.split(path.sep).join('/')))
    .sort();
}

function webOnlyReached(roots: string[]): string[] {
  const graph = importGraph(roots);
  return [...graph.keys()].filter(WEB_ONLY).map((file) => chain(graph, file));
}

t.test('the import scan follows relative imports transitively', async (t) => {
  const graph = importGraph(['api/server.ts']);
  t.ok(graph.has('api/app.ts'), 'api/server.ts imports api/app.ts');
  t.ok(graph.has('api/http/errorHandler.ts'), 'through api/app.ts it reaches api/http/errorHandler.ts');
  t.ok(graph.has('api/errors.ts'), 'and through that api/errors.ts');
});

t.test('no worker module reaches api/http/ or api/server.ts', async (t) => {
  const roots = sourceFiles('workers');
  t.ok(roots.includes('workers/main.ts'), 'the worker entry point is scanned');
  t.same(webOnlyReached(roots), [], 'none reached (each entry: the chain of imports that reaches it)');
});

t.test('no reporting module reaches api/http/ or api/server.ts', async (t) => {
  const roots = sourceFiles('reporting');
  t.ok(roots.includes('reporting/main.ts') && roots.includes('reporting/server.ts'), 'the reporting entry point and its HTTP are scanned');
  t.same(webOnlyReached(roots), [], 'none reached (each entry: the chain of imports that reaches it)');
});

t.test('the reporting process compiles reports without loading any family\'s rules', async (t) => {
  const graph = importGraph(sourceFiles('reporting'));
  t.ok(graph.has('api/families/transactions/fields.ts'), 'it reads the transaction table\'s shape');
  const rules = [...graph.keys()].filter((file) => /^api\/families\/[^/]+\/(rules|payment)\.ts$/.test(file));
  t.same(rules.map((file) => chain(graph, file)), [], 'no rules.ts or payment.ts reached (each entry: the chain of imports that reaches it)');
});

/** Every api/ module with the api/ modules and other project files it imports. */
function apiImports(): Map<string, string[]> {
  return new Map(sourceFiles('api').map((file) => [file, relativeImports(file)]));
}

/** Groups of modules that import each other in a circle (Tarjan's strongly connected components of two or more). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) visit(target);
      if (stack.includes(target)) low.set(file, Math.min(low.get(file)!, low.get(target)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const group = stack.splice(stack.indexOf(file));
    if (group.length > 1) found.push(group.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/** The floors inside api/ from the bottom up: a module may import its own floor or a lower one. */
const FLOORS = [['api/schema/'], ['api/db/'], ['api/query/'], ['api/engine/', 'api/families/'], ['api/http/']];
const floorOf = (file: string) => FLOORS.findIndex((floor) => floor.some((dir) => file.startsWith(dir)));

function importsWhere(accept: (from: string, to: string) => boolean): string[] {
  return [...apiImports()].flatMap(([from, targets]) => targets.filter((to) => accept(from, to)).map((to) => `${from} → ${to}`));
}

t.test('the cycle check finds a circle and passes a chain', async (t) => {
  const circle = new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]]);
  t.same(cycles(circle), [['a.ts', 'b.ts', 'c.ts']]);
  t.same(cycles(new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', []]])), []);
});

t.test('no api/ module imports itself back through others', async (t) => {
  const graph = apiImports();
  t.ok(graph.get('api/engine/operations.ts')?.includes('api/query/toSql.ts'), 'the scan sees the engine import the query compiler');
  t.same(cycles(graph), [], 'no circles (each entry: the modules of one circle)');
});

t.test('floors import only their own floor or lower ones (schema, db, query, engine and families, http)', async (t) => {
  const upward = importsWhere((from, to) => floorOf(from) >= 0 && floorOf(to) > floorOf(from));
  t.same(upward, [], 'no upward imports (each entry: importer → imported)');
});

t.test('no repository in api/db/ imports the engine or the web layer', async (t) => {
  t.same(importsWhere((from, to) => from.startsWith('api/db/') && /^api\/(engine|http)\//.test(to)), []);
});

t.test('api/ takes nothing from the reporting or worker processes', async (t) => {
  t.same(importsWhere((_from, to) => /^(reporting|workers)\//.test(to)), []);
});

t.test('the generic engine (api/engine/) imports no family: families build on it, never it on them', async (t) => {
  t.same(importsWhere((from, to) => from.startsWith('api/engine/') && to.startsWith('api/families/')), []);
});

t.test('configuration is read only in api/config.ts: no other source reads the environment', async (t) => {
  const readers = ['api', 'workers', 'reporting'].flatMap(sourceFiles).filter((file) => {
    if (file === 'api/config.ts') return false;
    // Code, not comments: a doc comment may show a client reading its own environment.
    const code = fs.readFileSync(path.join(projectRoot, file), 'utf8').split('\n').filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line)).join('\n');
    return /\bprocess\.env\b/.test(code);
  });
  t.same(readers, ['workers/threadpool.ts'], 'each entry: a file that reads process.env (the worker sets its thread pool size before libuv starts)');
});

/**
 * No two families import each other both ways: a rule both need lives in the family that owns it
 * or in a small module both use, or the registry hands it to the family beneath (a release's
 * funding rules to the transactions family).
 */
t.test('no pair of families imports each other both ways', async (t) => {
  const familyOf = (file: string) => /^api\/families\/([^/]+)\//.exec(file)?.[1];
  const edges = new Set(importsWhere((from, to) => !!familyOf(from) && !!familyOf(to) && familyOf(from) !== familyOf(to))
    .map((edge) => edge.split(' → ').map((file) => familyOf(file)!).join(' → ')));
  const pairs = [...edges].map((edge) => edge.split(' → ')).filter(([a, b]) => a < b && edges.has(`${b} → ${a}`)).map(([a, b]) => `${a} ↔ ${b}`).sort();
  t.same(pairs, []);
});
