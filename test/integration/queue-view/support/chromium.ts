import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`), driven by playwright-core. */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Debian's Chromium in a profile of its own; fails (never skips) when it is not installed. */
async function launchChromium(profile: string): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: this test drives the queue view in Debian's Chromium. Install it with ` +
        '`apt-get install -y --no-install-recommends chromium` (.ci/run does so when it is missing).',
    );
  }
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
  });
}

/**
 * Debian's Chromium in a fresh profile directory `cw-<name>-…` of the temporary folder; puts its
 * close and the profile's removal at the front of `closers` (the browser first, then the profile).
 */
export async function chromiumInProfile(
  name: string,
  closers: (() => unknown)[],
): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), `cw-${name}-`));
  closers.unshift(() => rmSync(profile, { recursive: true, force: true }));
  const context = await launchChromium(profile);
  closers.unshift(() => context.close());
  return context;
}
