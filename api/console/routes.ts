/**
 * The operator console (CONTRACT §17): one page at `/console`, loaded without a key, and its ES
 * modules. The page signs in with a secret key that lives only in the tab's sessionStorage and
 * calls the JSON API like any client (HTTP Basic, same origin), so it needs no server-side session
 * and no routes of its own beyond these files.
 *
 * The modules are served under a directory named by a hash of all of them, so their relative
 * imports resolve to one consistent, immutable set: a deploy can never mix old and new files.
 */
import Router from '@koa/router';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { notFound } from '../errors.ts';
import { secureHeaders } from '../http/pageHeaders.ts';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

interface ConsoleFiles {
  version: string;
  files: Map<string, Buffer>;
}

/**
 * The charting library (uPlot, from npm), served from this origin like the console's own files:
 * the page loads nothing from another origin. Its minified build is about 51 kB (22 kB gzipped).
 */
const VENDOR: Record<string, string> = {
  'uPlot.iife.min.js': 'uplot/dist/uPlot.iife.min.js',
  'uPlot.min.css': 'uplot/dist/uPlot.min.css',
};

function loadFiles(): ConsoleFiles {
  const dir = new URL('./public/', import.meta.url);
  const names = readdirSync(dir).filter((name) => TYPES[name.split('.').pop() ?? '']).sort();
  const files = new Map(names.map((name) => [name, readFileSync(new URL(name, dir))]));
  const resolve = createRequire(import.meta.url).resolve;
  for (const [name, module] of Object.entries(VENDOR)) files.set(name, readFileSync(resolve(module)));
  const hash = createHash('sha256');
  for (const [name, body] of files) hash.update(name).update('\0').update(body);
  return { version: hash.digest('base64url').slice(0, 16), files };
}

function pageHtml(version: string): string {
  const base = `/console/assets/${version}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Settle console</title>
<link rel="stylesheet" href="${base}/uPlot.min.css">
<link rel="stylesheet" href="${base}/console.css">
<script src="${base}/uPlot.iife.min.js"></script>
<script type="module" src="${base}/app.js"></script>
</head>
<body>
<noscript>The Settle console needs JavaScript.</noscript>
<div id="console"></div>
</body>
</html>
`;
}

export function consoleRoutes(): Router {
  const { version, files } = loadFiles();
  const html = pageHtml(version);
  const router = new Router();
  router.get('/console', (ctx) => {
    secureHeaders(ctx);
    ctx.set('Content-Security-Policy', CSP);
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  });
  router.get('/console/assets/:version/:file', (ctx) => {
    const body = files.get(ctx.params.file);
    if (!body) throw notFound(`No console file ${ctx.params.file}`);
    secureHeaders(ctx);
    // An old page asking for its old version gets today's files, revalidated rather than kept.
    ctx.set('Cache-Control', ctx.params.version === version ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.type = TYPES[ctx.params.file.split('.').pop()!];
    ctx.body = body;
  });
  return router;
}
