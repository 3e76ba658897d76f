/**
 * `npm run bench:client`: what the browser script costs a merchant page. The gzip size of
 * `/client.js` and of the secure-input frame's script, and the time from navigation start to a
 * card form whose secure inputs are all ready (`Payload.Form#ready`), in Debian's chromium,
 * beside the same page with plain inputs and no script (the same run's anchor). The public
 * library's own script is closed source and not reachable here, so its size is not given.
 *
 * Env: BENCH_LOADS (page loads per variant, default 20), CHROMIUM_PATH (default /usr/bin/chromium).
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { freePort } from '../api/db/embedded.ts';
import { cleanup, positive, startServers } from './harness.ts';

const LOADS = positive('BENCH_LOADS', 20);
const { servers, headers } = await startServers('client');

async function gzipSize(url: string): Promise<{ raw: number; gzip: number }> {
  const body = Buffer.from(await (await fetch(url)).arrayBuffer());
  return { raw: body.length, gzip: gzipSync(body, { level: 9 }).length };
}
const clientJs = await gzipSize(`${servers.settle}/client.js`);
const frameHtml = await (await fetch(`${servers.settle}/elements/input`)).text();
const frameScript = /src="([^"]+element\.js[^"]*)"/.exec(frameHtml)?.[1];
const elementJs = frameScript ? await gzipSize(new URL(frameScript, servers.settle).href) : { raw: 0, gzip: 0 };

const minted = await fetch(`${servers.settle}/access_tokens`, { method: 'POST', headers, body: JSON.stringify({ type: 'client', intent: { payment_form: { payment: { amount: 10 } } } }) });
const token = ((await minted.json()) as { id: string }).id;

const withScript = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body>
<form pl-form="payment" action="/order" method="post">
  <div pl-input="card_number"></div><div pl-input="expiry"></div><div pl-input="card_code"></div><button>Pay</button>
</form>
<script src="${servers.settle}/client.js"></script>
<script>
  Payload(${JSON.stringify(token)});
  var form = new Payload.Form({ form: document.querySelector('form') });
  form.ready.then(function () { window.readyAt = performance.now(); });
</script></body></html>`;
const plain = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body>
<form action="/order" method="post">
  <input name="card_number"><input name="expiry"><input name="card_code"><button>Pay</button>
</form>
<script>document.addEventListener('DOMContentLoaded', function () { window.readyAt = performance.now(); });</script></body></html>`;

const port = await freePort();
const merchant = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html', 'Cache-Control': 'no-store' });
  res.end(req.url?.startsWith('/plain') ? plain : withScript);
});
await new Promise<void>((resolve) => merchant.listen(port, '127.0.0.1', resolve));

const profile = mkdtempSync(path.join(os.tmpdir(), 'settle-bench-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

async function timeToReady(pagePath: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < LOADS; i++) {
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${port}${pagePath}?load=${i}`);
    await page.waitForFunction('window.readyAt !== undefined', undefined, { timeout: 15_000 });
    times.push(await page.evaluate<number>('window.readyAt'));
    await page.close();
  }
  return times.sort((a, b) => a - b);
}
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

// The first load of each variant fills the browser cache, as a returning shopper's would be.
const secure = await timeToReady('/secure');
const anchor = await timeToReady('/plain');
await context.close();
rmSync(profile, { recursive: true, force: true });
merchant.close();

const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
console.log(`\nclient: ${LOADS} page loads per variant, Debian chromium, ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}\n`);
console.log(`/client.js             ${kb(clientJs.raw)} (gzip ${kb(clientJs.gzip)})`);
console.log(`secure-input script    ${kb(elementJs.raw)} (gzip ${kb(elementJs.gzip)}), loaded once per input frame (cached)`);
console.log(`public library script  not measured (closed source, not reachable here)`);
console.log(`card form ready        median ${quantile(secure, 0.5).toFixed(0)} ms, p95 ${quantile(secure, 0.95).toFixed(0)} ms from navigation start`);
console.log(`anchor: plain inputs   median ${quantile(anchor, 0.5).toFixed(0)} ms, p95 ${quantile(anchor, 0.95).toFixed(0)} ms (DOMContentLoaded, no script)`);

await cleanup();
process.exit(0);
