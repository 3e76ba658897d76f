/**
 * The documentation stands alone: `GET /docs` renders `/openapi.json` with a renderer this
 * process serves itself (no CDN), under a strict CSP; every operation carries a curl sample that
 * runs as written; and the Markdown in the repository links only to files in it or to public pages.
 *
 * The browser test waits on locators, never on a string predicate: Playwright re-evaluates one
 * with eval on each poll, which the page's CSP (`script-src 'self'`) refuses.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { projectRoot } from '../api/config.ts';
import { serviceSignature, standardWebhooksSignature } from '../api/webhooks/signature.ts';
import { deliveryBody } from '../workers/webhooks/deliver.ts';
import { startTestApi } from './helpers/api.ts';
import { launchBrowser } from './helpers/browser.ts';

const run = promisify(execFile);
const api = await startTestApi(t);

/** Every URL in an attribute of the page (`src`, `href`, `spec-url`, …). */
function attributeUrls(html: string): string[] {
  return [...html.matchAll(/\s[\w-]+="([^"]*)"/g)].map((m) => m[1]).filter((v) => /^(\/|https?:|\/\/)/.test(v));
}

t.test('GET /docs answers the reference page under a strict CSP, referencing only its own origin', async (t) => {
  const res = await fetch(`${api.url}/docs`);
  t.equal(res.status, 200, 'no key needed');
  t.match(res.headers.get('content-type'), /^text\/html/);
  const csp = res.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'(;|$)/, 'no inline or remote script');
  t.match(csp, /connect-src 'self'(;|$)/);
  t.match(csp, /frame-ancestors 'none'/);
  t.notMatch(csp, /https?:|\*/, 'the policy names no other origin');
  const html = await res.text();
  t.notMatch(html, /https?:\/\/|src="\/\//, 'the page names no other origin');
  const urls = attributeUrls(html);
  t.ok(urls.includes('/openapi.json?version=v1'), 'renders the v1 description');
  const script = /<script src="([^"]+)"/.exec(html)?.[1];
  t.match(script, /^\/docs\/[\w.]+\.js\?v=/, 'the renderer comes from this process');
  const renderer = await fetch(`${api.url}${script}`, { headers: { 'Accept-Encoding': 'gzip' } });
  t.equal(renderer.status, 200);
  t.match(renderer.headers.get('content-type'), /^application\/javascript/);
  t.match(renderer.headers.get('cache-control'), /immutable/, 'named by its content');
  t.ok((await renderer.arrayBuffer()).byteLength > 500_000, 'the whole bundle');
});

t.test('/docs?version=v2 renders the v2 description; another version is a 400', async (t) => {
  const v2 = await fetch(`${api.url}/docs?version=v2`);
  t.equal(v2.status, 200);
  t.ok(attributeUrls(await v2.text()).includes('/openapi.json?version=v2'));
  t.equal((await fetch(`${api.url}/docs?version=v3`)).status, 400);
});

for (const version of ['v1', 'v2'] as const) {
  t.test(`every ${version} operation carries a curl sample, and the collections have readable names`, async (t) => {
    const doc = (await api.request('GET', `/openapi.json?version=${version}`, { key: null })).body;
    for (const [route, operations] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const source: string = operation['x-codeSamples']?.[0]?.source ?? '';
        t.match(source, /^curl -u \$SETTLE_KEY: /, `${method} ${route}`);
        const [head, tail = ''] = route.split('{id}');
        t.ok(source.includes(`"$SETTLE_URL${head}`) && source.includes(`${tail}"`), `${method} ${route} calls its own path`);
        t.equal(source.includes(`X-API-Version: ${version}`), version !== 'v1', `${method} ${route} names the version unless it is the default`);
      }
    }
    const names = new Map(doc.tags.map((tag: any) => [tag.name, tag['x-displayName']]));
    t.equal(names.get('transactions'), 'Transactions');
    t.equal(names.get('processing_accounts'), 'Processing accounts');
  });

  t.test(`the ${version} list and customer create samples run as written`, async (t) => {
    const doc = (await api.request('GET', `/openapi.json?version=${version}`, { key: null })).body;
    const env = { PATH: process.env.PATH, SETTLE_URL: api.url, SETTLE_KEY: api.key };
    const samples = Object.entries<Record<string, any>>(doc.paths).filter(([route]) => !route.includes('{id}'));
    for (const [route, operations] of samples) {
      const { stdout } = await run('sh', ['-c', `${operations.get['x-codeSamples'][0].source} --silent --show-error`], { env });
      // No reporting process runs here: the request log's query is checked (a 400 otherwise) before reporting is asked.
      const expected = route === '/request_logs' ? { object: 'error', error_type: 'ServiceUnavailable' } : { object: 'list' };
      t.match(JSON.parse(stdout), expected, `GET ${route}`);
    }
    const create = doc.paths['/customers'].post['x-codeSamples'][0].source;
    const { stdout } = await run('sh', ['-c', `${create} --silent --show-error`], { env });
    const created = JSON.parse(stdout);
    t.match(created, { object: version === 'v1' ? 'customer' : 'account', name: '<name>' }, stdout);
  });
}

t.test('a browser shows the reference: the collections by name and their curl samples', async (t) => {
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const origin = new URL(api.url).origin;
  const elsewhere: string[] = [];
  const blocked = new Set<string>();
  const errors: string[] = [];
  page.on('request', (request) => {
    if (!/^(blob|data):/.test(request.url()) && new URL(request.url()).origin !== origin) elsewhere.push(request.url());
  });
  page.on('requestfailed', (request) => blocked.add(request.url()));
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${api.url}/docs`);
  // The renderer reads the whole description before it shows anything: a slow machine takes a while.
  await t.resolves(page.getByText('Transactions', { exact: true }).first().waitFor({ state: 'visible', timeout: 60_000 }), 'Transactions');
  await t.resolves(page.getByText('Processing accounts', { exact: true }).first().waitFor(), 'Processing accounts');
  await t.resolves(page.getByText('Accounts', { exact: true }).first().waitFor(), 'Accounts');
  await t.resolves(page.getByText('Authentication', { exact: true }).first().waitFor(), 'the introduction');
  await page.getByText('Transactions', { exact: true }).first().click();
  await t.resolves(page.getByText('"$SETTLE_URL/transactions?limit=10').first().waitFor({ state: 'visible' }), 'the list sample');
  // The reference is too long for a full-page picture: the window is what a reader first sees.
  if (process.env.SETTLE_SCREENSHOTS) await page.screenshot({ path: path.join(process.env.SETTLE_SCREENSHOTS, 'api-reference.png') });
  t.same(errors, [], 'no script errors');
  t.same(elsewhere.filter((url) => !blocked.has(url)), [], 'nothing was fetched from another origin');

  await page.getByRole('link', { name: 'Show v2' }).click();
  // A second whole description to read: as slow as the first.
  await t.resolves(page.getByText('Interface version v2').first().waitFor({ state: 'visible', timeout: 60_000 }), 'the v2 page');
  await page.getByText('Customers', { exact: true }).first().click({ timeout: 60_000 });
  await t.resolves(page.getByText("X-API-Version: v2").first().waitFor({ state: 'visible' }), 'samples name the version');
});

t.test('the Node and Python receivers in docs/webhooks.md accept what the worker signs, under either secret during a rotation, and refuse anything else', async (t) => {
  const guide = readFileSync(path.join(projectRoot, 'docs', 'webhooks.md'), 'utf8');
  const source = /```js\n([\s\S]*?)```/.exec(guide)?.[1] ?? '';
  const python = /```python\n([\s\S]*?)```/.exec(guide)?.[1] ?? '';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'settle-docs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'verify-settle-webhook.mjs'), source);
  writeFileSync(path.join(dir, 'verify_settle_webhook.py'), python);
  const { verifySettleWebhook: node } = await import(pathToFileURL(path.join(dir, 'verify-settle-webhook.mjs')).href);
  // The Python function, called once per case through a small driver reading JSON cases on stdin.
  const viaPython = async (cases: Array<{ secrets: string[]; body: string; headers: Record<string, string>; now: number }>): Promise<boolean[]> => {
    const driver = `import json, sys\nsys.path.insert(0, ${JSON.stringify(dir)})\nfrom verify_settle_webhook import verify_settle_webhook\n` +
      'print(json.dumps([verify_settle_webhook(c["secrets"], c["body"].encode(), c["headers"], c["now"]) for c in json.load(sys.stdin)]))';
    const out = await new Promise<string>((resolve, reject) => {
      const child = execFile('python3', ['-c', driver], (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)));
      child.stdin!.end(JSON.stringify(cases));
    });
    return JSON.parse(out);
  };
  const now = Math.floor(Date.now() / 1000);
  const body = deliveryBody({
    delivery_id: 'wd_1', org_id: 'org_1', environment: 'test', webhook_id: 'wh_2Lk7PqW9xZ3vB8nR4tY6mC1d',
    event_id: 'evt_2Lk7PqW9xZ3vB8nR4tY6mC1d', trigger: 'payment', object_id: 'txn_2Lk7PqW9xZ3vB8nR4tY6mC1d', object_type: 'transaction',
    value: { type: 'payment', amount: 7.99, status: 'processed', status_code: 'approved', description: 'Café crème' }, event_created_at: new Date(), sequence: 1,
  }, 'https://example.com/settle');
  const id = 'evt_2Lk7PqW9xZ3vB8nR4tY6mC1d';
  const signed = (secrets: string[], extra: Record<string, string> = {}) => ({
    'x-service-signature': serviceSignature(secrets[0], body), 'webhook-id': id, 'webhook-timestamp': String(now),
    'webhook-signature': secrets.map((secret) => standardWebhooksSignature(secret, id, now, body)).join(' '), ...extra,
  });
  const older = 'whsec_KQCd94SA4g1OvASMsFgKPY7yEisw8O6B';
  const newer = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const cases: Array<[string, string[], string, Record<string, string>, number, boolean]> = [];
  for (const secret of [older, 'a secret of my own choosing']) {
    cases.push([`a delivery signed with ${secret.slice(0, 6)}…`, [secret], body, signed([secret]), now, true]);
    cases.push(['a changed body', [secret], body.replace('processed', 'declined'), signed([secret]), now, false]);
    cases.push(['another secret', [secret === older ? newer : `${secret}, another`], body, signed([secret]), now, false]);
    cases.push(['a wrong Standard Webhooks signature', [secret], body, signed([secret], { 'webhook-signature': 'v1,AAAA' }), now, false]);
    cases.push(['a replay five minutes later', [secret], body, signed([secret]), now + 301, false]);
  }
  cases.push(['during a rotation, a receiver holding only the old secret', [older], body, signed([newer, older]), now, true]);
  cases.push(['during a rotation, a receiver holding only the new secret', [newer], body, signed([newer, older]), now, true]);
  cases.push(['after the overlap, the old secret alone no longer verifies', [older], body, signed([newer]), now, false]);
  cases.push(['a receiver holding both, after the overlap', [newer, older], body, signed([newer]), now, true]);
  const fromPython = await viaPython(cases.map(([, secrets, b, headers, at]) => ({ secrets, body: b, headers, now: at })));
  cases.forEach(([name, secrets, b, headers, at, expected], i) => {
    t.equal(node(secrets, Buffer.from(b), headers, at), expected, `Node: ${name}`);
    t.equal(fromPython[i], expected, `Python: ${name}`);
  });
});

/** Markdown files of the repository: README.md, ARCHITECTURE.md, SECURITY.md and everything under docs/. */
function markdownFiles(): string[] {
  const found = ['README.md', 'ARCHITECTURE.md', 'SECURITY.md'];
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(projectRoot, dir))) {
      const relative = path.join(dir, name);
      if (statSync(path.join(projectRoot, relative)).isDirectory()) walk(relative);
      else if (name.endsWith('.md')) found.push(relative);
    }
  };
  walk('docs');
  return found;
}

/** Link targets in Markdown: inline `[text](target)` and reference `[name]: target`, outside code. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
  const references = [...prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]);
  return [...inline, ...references];
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const [, heading] of markdown.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    anchors.add(heading.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-'));
  }
  return anchors;
}

t.test('README, ARCHITECTURE and docs/ link only to files in the repository or to public pages', async (t) => {
  const files = markdownFiles();
  t.ok(files.includes(path.join('docs', 'getting-started.md')), 'the guides are there');
  for (const file of files) {
    const text = readFileSync(path.join(projectRoot, file), 'utf8');
    // Paths named in prose or code too, not only links: none may climb out of the repository.
    for (const [climb] of text.matchAll(/(?:\.\.\/)+[\w.-]+/g)) {
      const inside = path.relative(projectRoot, path.resolve(projectRoot, path.dirname(file), climb));
      t.ok(!inside.startsWith('..'), `${file}: ${climb} stays in the repository`);
    }
    for (const target of linkTargets(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
        t.match(target, /^(https:\/\/|http:\/\/|mailto:)/, `${file}: ${target} is a public page`);
        t.notMatch(target, /^https?:\/\/(localhost|127\.|0\.0\.0\.0|\[::1\])/, `${file}: ${target} is not a local address`);
        continue;
      }
      const [beforeAnchor, anchor] = target.split('#');
      const filePart = beforeAnchor.split('?')[0];
      const resolved = filePart ? path.resolve(projectRoot, filePart.startsWith('/') ? `.${filePart}` : path.join(path.dirname(file), filePart)) : path.join(projectRoot, file);
      const inside = path.relative(projectRoot, resolved);
      t.ok(!inside.startsWith('..') && !path.isAbsolute(inside), `${file}: ${target} stays in the repository`);
      t.ok(existsSync(resolved), `${file}: ${target} exists`);
      if (anchor && resolved.endsWith('.md') && existsSync(resolved)) {
        t.ok(anchorsOf(readFileSync(resolved, 'utf8')).has(anchor), `${file}: ${target} names a heading`);
      }
    }
  }
});
