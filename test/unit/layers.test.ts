/**
 * Unit tier: the process layers. The worker and reporting processes take the domain, the
 * repositories and the shared process code (api/process.ts, api/config.ts); nothing of theirs may
 * reach the web process's HTTP layer (api/http/) or its entry point (api/server.ts), directly or
 * through another module. Read from the source text, so the rule holds before anything runs.
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
