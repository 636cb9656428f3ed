import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { ADMIN_TOKEN } from './service.js';

/** The web console in a real headless Chromium (the console e2e tests). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const SHOTS = path.resolve('test-output');
export const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.CI) throw new Error(`Chromium is required in CI for the console tests (not found at ${CHROMIUM})`);
if (!haveChromium) console.warn(`*** console e2e tests SKIPPED: no Chromium at ${CHROMIUM} (apt-get install chromium) ***`);

/** Newest modification time of the files under dir (ms). */
function newest(dir: string): number {
  let max = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    max = Math.max(max, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return max;
}

/** dist/console is made by `npm run build`; build just the console when it is missing or older than its source. */
export function ensureConsoleBuilt(): void {
  const index = path.resolve('dist/console/index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= newest(path.resolve('console'))) return;
  const r = spawnSync('npx', ['vite', 'build', '--config', 'console/vite.config.ts', '--logLevel', 'warn'], {
    stdio: 'inherit',
    // Vitest sets NODE_ENV=test, which would give React's development build.
    env: { ...process.env, NODE_ENV: 'production' },
  });
  if (r.status !== 0) throw new Error('building the console failed');
}

export interface ConsoleBrowser {
  ctx: BrowserContext;
  page: Page;
  /** Script errors, CSP refusals, failed console files: the test's last check expects none. */
  problems: string[];
  shot(name: string): Promise<Buffer>;
  close(): Promise<void>;
}

/** Builds the console if needed and opens it in a fresh Chromium profile. */
export async function openConsoleBrowser(viewport = { width: 1280, height: 900 }): Promise<ConsoleBrowser> {
  ensureConsoleBuilt();
  mkdirSync(SHOTS, { recursive: true });
  const userDir = mkdtempSync(path.join(os.tmpdir(), 'console-chromium-'));
  const ctx = await chromium.launchPersistentContext(userDir, { executablePath: CHROMIUM, args: ARGS, headless: true, viewport });
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  // Script errors and CSP refusals would go unnoticed in a headless browser: collect them.
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  // API errors are answers the pages handle; a console file (or anything else) failing is not.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !new URL(r.url()).pathname.startsWith('/admin/')) problems.push(`${r.status()} ${r.url()}`);
  });
  // ERR_ABORTED: a page navigated away while its fetch was in flight (the tests do that).
  page.on('requestfailed', (r) => {
    if (r.failure()?.errorText !== 'net::ERR_ABORTED') problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  return {
    ctx,
    page,
    problems,
    shot: (name) => page.screenshot({ path: path.join(SHOTS, `console-${name}.png`), fullPage: true }),
    async close() {
      await ctx.close();
      rmSync(userDir, { recursive: true, force: true });
    },
  };
}

/** Signs in on the sign-in page with `token` (its break-glass form). */
export async function signIn(page: Page, token = ADMIN_TOKEN): Promise<void> {
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in with the token' }).click();
}

/** Opens the console of the service at `url` and signs in with ADMIN_TOKEN, up to its overview. */
export async function openSignedInConsole(url: string): Promise<ConsoleBrowser> {
  const browser = await openConsoleBrowser();
  await browser.page.goto(`${url}/console/`);
  await signIn(browser.page);
  await browser.page.getByRole('heading', { name: /^Overview/ }).waitFor();
  return browser;
}

/** How far the page itself scrolls sideways (0: it fits the viewport). */
export function pageOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}
