/**
 * The dashboard pages in a real headless Chromium (Debian's chromium driven
 * by playwright-core): Run now on a flow and watch it succeed without a
 * reload, the run page's counts and report link, a cancel, a pause lifted,
 * a flow description with markup shown as text. Screenshots of each page go
 * to test/artifacts/ (git-ignored).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityOf } from '../../src/runtime/clients.js';
import { post, startProject, type Project } from './helpers.js';
import { waitFor } from '../support/wait.js';
import { CHROMIUM, haveChromium as chromiumInstalled, launchChromium } from '../support/chromium.js';

const ARTIFACTS = path.resolve(import.meta.dirname, '../artifacts');
const haveChromium = chromiumInstalled();
if (!haveChromium) {
  console.warn(
    `test/ui/browser.test.ts: skipped: no Chromium at ${CHROMIUM}. Install it with: apt-get update && apt-get install -y chromium (or set MSGFLOW_CHROMIUM)`,
  );
}

// CI sets MSGFLOW_REQUIRE_CHROMIUM=1 (.ci/run installs chromium): there a missing browser fails instead of skipping.
describe.runIf(!haveChromium && process.env.MSGFLOW_REQUIRE_CHROMIUM === '1')('dashboard in Chromium (required)', () => {
  it('has a Chromium to drive', () => {
    expect.fail(`no Chromium at ${CHROMIUM}: apt-get update && apt-get install -y chromium`);
  });
});

describe.skipIf(!haveChromium)('dashboard in Chromium', () => {
  let p: Project;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    p = await startProject();
    browser = await launchChromium({ width: 1280, height: 800 });
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await p?.close();
  });

  it('shows flows with their trigger; a description with markup is text, not markup', async () => {
    await page.goto(`${p.url}/#/flows`);
    const row = page.locator('tr[data-flow="check-some"]');
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain('At 09:00, Monday through Friday (Europe/Berlin), next');
    const xss = page.locator('tr[data-flow="xss"]');
    await expect(xss.textContent()).resolves.toContain('<script>window.__xss = 1</script>');
    expect(await page.evaluate(() => (window as any).__xss)).toBeUndefined();
    expect(await page.locator('tr[data-flow="xss"] script, tr[data-flow="xss"] img').count()).toBe(0);
    await page.screenshot({ path: path.join(ARTIFACTS, 'flows.png'), fullPage: true });
  });

  it('Run now starts check-some; the run page reaches succeeded live and shows counts, a plot and the report link', async () => {
    await page.goto(`${p.url}/#/flows`);
    // A marker that a reload would wipe: the page must update without one.
    await page.evaluate(() => ((window as any).__noReload = true));
    await page.click('button[data-run="check-some"]');
    await page.click('form[data-flow="check-some"] button[type=submit]');
    await page.waitForURL(/#\/runs\/check-some/);
    await page.locator('[data-run-status="succeeded"]').waitFor({ timeout: 20_000 });
    expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
    const step = page.locator('tr[data-step="check"]');
    await expect(step.locator('[data-count="done"]').textContent()).resolves.toMatch(/^[1-9]\d*$/);
    await expect(step.locator('a', { hasText: 'report' }).getAttribute('href')).resolves.toMatch(/\/steps\/check\/report$/);
    await page.locator('[data-plot^="Accounts"] [data-bar="exists"]').waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'run.png'), fullPage: true });
  });

  it('the Runs page shows a run started elsewhere and its end, through server-sent events', async () => {
    await page.goto(`${p.url}/#/runs`);
    await page.locator('#live.on').waitFor();
    await page.evaluate(() => ((window as any).__noReload = true));
    const started = await post(`${p.url}/api/flows/check-some/runs`, {});
    const row = page.locator(`tr[data-run="${started.body.runId}"]`);
    await row.locator('[data-status="succeeded"]').waitFor({ timeout: 20_000 });
    expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'runs.png'), fullPage: true });
  });

  it('Cancel stops a long run; the page shows it cancelled without a reload', async () => {
    const started = await post(`${p.url}/api/flows/slow-check/runs`, {});
    const id: string = started.body.runId;
    await page.goto(`${p.url}/#/runs/${id}`);
    await page.evaluate(() => ((window as any).__noReload = true));
    const cancel = page.locator('button[data-action="cancel"]');
    await cancel.waitFor();
    if (await cancel.isEnabled()) {
      page.once('dialog', (d) => void d.accept());
      await cancel.click();
      await page.locator('[data-run-status="cancelled"]').waitFor({ timeout: 30_000 });
      expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
    } else {
      // The run ended before the page showed it (a very fast machine): nothing left to cancel.
      expect((await p.runtime.engine.getRun(id))!.status).not.toMatch(/running|waiting/);
    }
    await page.screenshot({ path: path.join(ARTIFACTS, 'cancelled.png'), fullPage: true });
  }, 60_000);

  it('Retry on a failed run opens the retry run', async () => {
    const started = await post(`${p.url}/api/flows/fail-some/runs`, {});
    const id: string = started.body.runId;
    await waitFor('the run to fail', async () => (await p.runtime.engine.getRun(id))?.status === 'failed');
    await page.goto(`${p.url}/#/runs/${id}`);
    await page.click('button[data-action="retry"]');
    await page.waitForURL((u) => u.hash.startsWith('#/runs/') && !u.hash.endsWith(id));
    await page.locator('[data-run-status]').waitFor();
  });

  it('Instances shows the state, the send queue, the opt-out list size, a pause with its reason and end; Lift removes it; the audit history plots', async () => {
    const audit = await post(`${p.url}/api/flows/audit/runs`, {});
    await waitFor('the audit run', async () => (await p.runtime.engine.getRun(audit.body.runId))?.status === 'succeeded');
    // Messages in the paced send queue (one leaves every 500 ms) and two opted-out chats, before the instance is first asked.
    const client = p.runtime.clientFor('default');
    for (let i = 0; i < 10; i++) await client.sendMessage({ chatId: '79002223344@c.us', message: `queued ${i}` });
    const optOuts = p.runtime.store.kv('shared:opt-out');
    const self = identityOf(p.runtime.config, 'default');
    await optOuts.set(`${self}:79001112233@c.us`, { at: Date.now() });
    await optOuts.set(`${self}:79003334455@c.us`, { at: Date.now() });
    const inst = (await (await fetch(`${p.url}/api/instances`)).json()) as any;
    const identity = inst.instances[0].identity;
    const now = Date.now();
    await p.runtime.store.kv('shared:pauses').set(`${identity}:checkAccount`, {
      instance: 'default',
      identity,
      scope: 'checkAccount',
      since: now,
      until: now + 7_200_000,
      retryAfterMs: 7_200_000,
      reason: 'rate_limit_exceeded',
    });
    await page.goto(`${p.url}/#/instances`);
    const pause = page.locator('tr[data-instance="default"] [data-pause="checkAccount"]');
    await expect(pause.textContent()).resolves.toMatch(/rate_limit_exceeded until .* left\)/);
    await expect(page.locator('[data-state="default"]').textContent()).resolves.toBe('authorized');
    await expect(page.locator('[data-queue="default"]').textContent()).resolves.toMatch(
      /^([1-9]|10) waiting, next by .* \(one every 500 ms\)$/,
    );
    await expect(page.locator('[data-optouts="default"]').textContent()).resolves.toBe('2');
    await page.locator('[data-plot^="outgoing.audit"] canvas').first().waitFor();
    // One audit: an hour either side of it, not the years a lone time point would stretch to.
    await page.locator('[data-plot^="outgoing.audit"][data-x-span="7200000"]').waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'instances.png'), fullPage: true });
    page.once('dialog', (d) => void d.accept());
    await page.click('button[data-lift="default"]');
    await page.getByText('no pauses').waitFor();
    expect(await p.runtime.store.kv('shared:pauses').entries()).toEqual([]);
  });

  it('ran every page without a script error', () => {
    expect(pageErrors).toEqual([]);
  });
});
