/**
 * Debian's Chromium driven by playwright-core, for the dashboard's browser
 * tests and its first-paint benchmark: where it is, and one way to start it
 * (headless, a throw-away profile, nothing fetched in the background).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** MSGFLOW_CHROMIUM, else Debian's package path. */
export const CHROMIUM = process.env.MSGFLOW_CHROMIUM ?? '/usr/bin/chromium';

export const haveChromium = (): boolean => existsSync(CHROMIUM);

export interface Chromium {
  context: BrowserContext;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/** @param viewport @default playwright's (1280×720) */
export async function launchChromium(viewport?: { width: number; height: number }): Promise<Chromium> {
  const profile = mkdtempSync(path.join(tmpdir(), 'msgflow-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    ...(viewport ? { viewport } : {}),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
