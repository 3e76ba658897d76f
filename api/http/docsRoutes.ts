/**
 * `GET /docs[?version=v1|v2]`: the API reference, public like `/openapi.json` which it renders.
 * The renderer is Redoc's standalone bundle from the installed `redoc` package, served by this
 * process under a URL named by its hash: the page loads nothing from another origin.
 *
 * The Content-Security-Policy allows only what Redoc needs besides our own script: inline styles
 * (styled-components writes <style> elements, with no nonce support in the bundle), `data:` images
 * (its icons) and a `blob:` worker (its search index). No inline or remote script.
 */
import Router from '@koa/router';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { badRequest } from '../errors.ts';
import { secureHeaders } from './pageHeaders.ts';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; worker-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const RENDERER_PATH = '/docs/redoc.standalone.js';

interface Renderer {
  body: Buffer;
  hash: string;
  /** compressed on first use: about a third of the megabyte, for every browser that accepts gzip */
  gzipped?: Buffer;
}

function loadRenderer(): Renderer {
  const file = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');
  const body = readFileSync(file);
  return { body, hash: createHash('sha256').update(body).digest('base64url').slice(0, 16) };
}

function pageHtml(version: string, rendererUrl: string): string {
  const other = version === 'v1' ? 'v2' : 'v1';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Settle API reference (${version})</title>
<style>
body { margin: 0; }
.settle-docs-bar { display: flex; gap: 1em; align-items: baseline; padding: 0.6em 1.25em; font: 14px/1.4 system-ui, sans-serif; border-bottom: 1px solid #ddd; }
.settle-docs-bar strong { margin-right: auto; }
</style>
</head>
<body>
<nav class="settle-docs-bar" aria-label="Interface version">
<strong>Settle API reference</strong>
<span>Interface version ${version}</span>
<a href="/docs?version=${other}">Show ${other}</a>
<a href="/openapi.json?version=${version}">openapi.json</a>
</nav>
<redoc spec-url="/openapi.json?version=${version}" expand-responses="200" required-props-first="true"></redoc>
<noscript>The reference needs JavaScript; the same description is at /openapi.json?version=${version}.</noscript>
<script src="${rendererUrl}"></script>
</body>
</html>
`;
}

export function docsRoutes(): Router {
  const renderer = loadRenderer();
  const rendererUrl = `${RENDERER_PATH}?v=${renderer.hash}`;
  const pages = { v1: pageHtml('v1', rendererUrl), v2: pageHtml('v2', rendererUrl) };
  const router = new Router();
  router.get('/docs', (ctx) => {
    const version = ctx.query.version ?? 'v1';
    if (version !== 'v1' && version !== 'v2') throw badRequest('version must be v1 or v2', { version: 'Must be v1 or v2' });
    secureHeaders(ctx);
    ctx.set('Content-Security-Policy', CSP);
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = pages[version];
  });
  router.get(RENDERER_PATH, (ctx) => {
    secureHeaders(ctx);
    ctx.set('ETag', `"${renderer.hash}"`);
    ctx.set('Cache-Control', ctx.query.v === renderer.hash ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.set('Vary', 'Accept-Encoding');
    ctx.status = 200;
    ctx.type = 'application/javascript; charset=utf-8';
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = (renderer.gzipped ??= gzipSync(renderer.body));
    } else {
      ctx.body = renderer.body;
    }
  });
  return router;
}
