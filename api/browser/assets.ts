/**
 * The browser files the web process serves (client library, frame and page scripts, styles), read
 * once at start from api/browser/public and named by content hash: a URL carrying `?v=<hash>` is
 * immutable, a bare one is revalidated with its ETag.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Context } from 'koa';

export interface Asset {
  body: Buffer;
  type: string;
  hash: string;
}

const TYPES: Record<string, string> = { js: 'application/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

function load(file: string): Asset {
  const body = readFileSync(new URL(`./public/${file}`, import.meta.url));
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, 16);
  return { body, type: TYPES[file.split('.').pop() ?? ''] ?? 'application/octet-stream', hash };
}

/** URL path → file. */
export const ASSETS: Record<string, Asset> = {
  '/client.js': load('client.js'),
  '/elements/inputs.js': load('inputs.js'),
  '/elements/element.js': load('element.js'),
  '/elements/element.css': load('element.css'),
  '/pages/inputs.js': load('inputs.js'),
  '/pages/checkout.js': load('checkout.js'),
  '/pages/processing-account.js': load('processing-account.js'),
  '/pages/pages.css': load('pages.css'),
};

/** The versioned URL of an asset, for pages that reference it. */
export function assetUrl(path: string): string {
  return `${path}?v=${ASSETS[path].hash}`;
}

export function serveAsset(ctx: Context, asset: Asset): void {
  const versioned = ctx.query.v === asset.hash;
  ctx.set('ETag', `"${asset.hash}"`);
  ctx.set('Cache-Control', versioned ? 'public, max-age=31536000, immutable' : 'public, max-age=300');
  ctx.set('X-Content-Type-Options', 'nosniff');
  // Loaded by merchants' pages on other origins (and by pages that require CORP).
  ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.status = 200;
  ctx.type = asset.type;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  ctx.body = asset.body;
}
