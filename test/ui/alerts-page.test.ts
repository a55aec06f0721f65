/**
 * The dashboard's Alerts page in a real headless Chromium: a failed run's
 * alert, decided by the alert dispatcher from what the engine recorded,
 * shows raised with its subject, count and a link to the run; resolved once
 * the flow succeeds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlertDispatcher } from '../../src/engine/alerts/dispatcher.js';
import { busLogger } from '../../src/engine/run/engine.js';
import { post, startProject, type Project } from './helpers.js';
import { waitFor } from '../support/wait.js';
import { haveChromium, launchChromium } from '../support/chromium.js';

describe.skipIf(!haveChromium())('the Alerts page', () => {
  let p: Project;
  let browser: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    p = await startProject();
    browser = await launchChromium({ width: 1280, height: 800 });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await p?.close();
  });

  it('lists a failed run raised, linked to its run, and says when there are none', async () => {
    const page = await browser.context.newPage();
    await page.goto(`${p.url}/#/alerts`);
    await page.getByText('no alerts').waitFor({ timeout: 5000 });

    const started = await post(`${p.url}/api/flows/fail-some/runs`, {});
    const id: string = started.body.runId;
    await waitFor('the run to fail', async () => (await p.runtime.engine.getRun(id))?.status === 'failed');
    const { runtime } = p;
    const dispatcher = new AlertDispatcher({
      engine: runtime.engine,
      store: runtime.store,
      bus: runtime.bus,
      clock: runtime.clock,
      logger: busLogger(runtime.bus),
      flows: () => runtime.flows().flows,
    });
    await dispatcher.drain();

    // The page was on screen before the alert: a reload shows it.
    await page.reload();
    const row = page.locator('tr[data-alert="run-failed:fail-some"]');
    await row.waitFor({ timeout: 5000 });
    expect(await row.getAttribute('data-state')).toBe('raised');
    expect(await row.textContent()).toContain(`run ${id} of fail-some failed`);
    await row.locator(`a[href="#/runs/${id}"]`).click();
    await page.locator(`tr[data-step="each"]`).waitFor({ timeout: 5000 });

    await dispatcher.resolve('run-failed', 'fail-some');
    await page.click('header nav a[data-page="alerts"]');
    await page.locator('tr[data-alert="run-failed:fail-some"][data-state="resolved"]').waitFor();
    await page.close();
  });
});
