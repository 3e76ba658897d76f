/**
 * A real browser for tests: Debian's chromium driven by playwright-core, with a fresh profile per
 * test file, and a tiny merchant site on its own loopback origin that records what is posted to it.
 * Without chromium the test fails with how to install it (it never skips).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import type { Test } from 'tap';
import { eventually } from './wait.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export async function launchBrowser(t: Test): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`chromium is not installed at ${CHROMIUM}: browser tests need it. Install it with \`apt-get update && apt-get install -y chromium\` (.ci/run does this).`);
  }
  const profile = mkdtempSync(path.join(os.tmpdir(), 'settle-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, timeout: 60_000 });
  context.setDefaultTimeout(15_000);
  t.teardown(async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  });
  return context;
}

export interface Posted {
  path: string;
  body: string;
  form: URLSearchParams;
}

export interface MerchantSite {
  /** its origin, a different one from the API's */
  url: string;
  /** pages by path; each answered as HTML */
  pages: Map<string, string>;
  posted: Posted[];
  /**
   * The first POST to `path` (now or later); fails at once when `failure()` names a reason (e.g.
   * the page reported an error instead of submitting), or after `ms`.
   */
  waitForPost: (path: string, failure?: () => string | null, ms?: number) => Promise<Posted>;
}

export async function startMerchantSite(t: Test): Promise<MerchantSite> {
  const site: MerchantSite = {
    url: '',
    pages: new Map(),
    posted: [],
    waitForPost: async (wanted, failure = () => null, ms = 15_000) => {
      const seen = await eventually(() => ({ found: site.posted.find((p) => p.path === wanted), reason: failure() }),
        ({ found, reason }) => Boolean(found || reason), ms, 20);
      if (seen.found) return seen.found;
      if (seen.reason) throw new Error(`nothing was posted to ${wanted}: ${seen.reason}`);
      throw new Error(`nothing was posted to ${wanted} within ${ms} ms`);
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const pathname = new URL(req.url ?? '/', 'http://x').pathname;
      if (req.method === 'POST') {
        const body = Buffer.concat(chunks).toString('utf8');
        const posted = { path: pathname, body, form: new URLSearchParams(body) };
        site.posted.push(posted);
        res.writeHead(200, { 'Content-Type': 'text/html' });
        res.end('<!doctype html><title>Thanks</title><h1>Thank you</h1>');
        return;
      }
      const page = site.pages.get(pathname);
      res.writeHead(page === undefined ? 404 : 200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(page ?? 'not found');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  site.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return site;
}

/** With SETTLE_SCREENSHOTS=<dir>, the tests save the pages the README shows (docs/screenshots). */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.SETTLE_SCREENSHOTS;
  if (dir) await page.screenshot({ path: path.join(dir, name), fullPage: true });
}

/** What a person does to a field: types key by key, pastes from the clipboard, or lets the browser autofill. */
export type Entry = 'type' | 'paste' | 'autofill';

/** Puts `text` on the browser's clipboard the way a person does: types it somewhere, selects it, copies it. */
async function copyToClipboard(page: Page, text: string): Promise<void> {
  const scratch = await page.context().newPage();
  await scratch.setContent('<textarea aria-label="scratch"></textarea>');
  const area = scratch.getByLabel('scratch');
  await area.pressSequentially(text);
  await area.press('ControlOrMeta+A');
  await area.press('ControlOrMeta+C');
  await scratch.close();
}

/**
 * Enters `text` into `field` as a person would: `type` presses each key; `paste` copies it to the
 * clipboard and presses Ctrl+V in the field; `autofill` does what Chromium's autofill does (sets
 * the value, then fires input and change).
 */
export async function enter(page: Page, field: Locator, text: string, how: Entry = 'type'): Promise<void> {
  if (how === 'paste') await copyToClipboard(page, text);
  await field.click();
  if (how === 'type') await field.pressSequentially(text);
  else if (how === 'paste') await field.press('ControlOrMeta+V');
  else {
    await field.evaluate((element, value) => {
      const input = element as unknown as { value: string; dispatchEvent: (event: Event) => boolean };
      input.value = value;
      input.dispatchEvent(new Event('input', { bubbles: true }));
      input.dispatchEvent(new Event('change', { bubbles: true }));
    }, text);
  }
}

/** Clears a field as a person does: select all, Backspace. */
export async function clear(field: Locator): Promise<void> {
  await field.click();
  await field.press('ControlOrMeta+A');
  await field.press('Backspace');
}
