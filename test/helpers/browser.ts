import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether the browser tests can run: Chromium is there. Missing in CI is an error; missing on
 * a developer's machine skips them with a warning naming `what`.
 */
export function haveChromium(what: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is missing: the ${what} needs it in CI`);
  console.warn(`*** ${what} SKIPPED: ${CHROMIUM} not found (apt-get install chromium)`);
  return false;
}

/** Headless Chromium that reaches nothing on its own (no updates, sync or QUIC probes). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
