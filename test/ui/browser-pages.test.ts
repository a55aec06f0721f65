/**
 * The dashboard as a new user meets it, in a real headless Chromium (Debian's
 * chromium driven by playwright-core): a loading state before the first
 * answer, one date format, confirmations before Cancel, Lift and a run that
 * would wait, "not asked" explained, outcome colours with legends, full
 * bars of finished steps, a sample event for a notification-triggered flow,
 * a phone-sized screen, a favicon. Screenshots go to test/artifacts/.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Dialog, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUiServer } from '../../src/ui/server.js';
import { post, runNowFlows, startProject, type Project } from './helpers.js';
import { waitFor } from '../support/wait.js';
import { haveChromium, launchChromium } from '../support/chromium.js';

const ARTIFACTS = path.resolve(import.meta.dirname, '../artifacts');
/** The browser's zone in these tests: no daylight saving, and a half-hour offset that no formatting can get right by accident. */
const ZONE = 'Asia/Kolkata';
const OFFSET_MS = 5.5 * 3_600_000;
/** A time as the pages must show it in ZONE. */
const shown = (ms: number) => new Date(ms + OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ') + ' GMT+5:30';
/** A run that stays unfinished until cancelled (it waits an hour for a reply that never comes). */
const ASK = `name: ask
steps:
  - id: reply
    uses: waitForReply
    with: { chatId: "79001112233@c.us", timeout: 1h }
`;
/** A campaign in two variants to four chats: its run page plots one funnel per variant. */
const CAMPAIGN = `name: campaign
steps:
  - id: send
    uses: messages.broadcast
    with:
      recipients: [79001112233, 79002223344, 79003334455, 79004445566]
      campaign: ui-funnel
      variants:
        - { name: a, message: { text: "Hi from A" } }
        - { name: b, message: { text: "Hi from B" } }
      follow: { deadline: 0 }
      reconcile: { sendInterval: 500ms }
`;
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe.skipIf(!haveChromium())('dashboard pages in Chromium', () => {
  let p: Project;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  const pageErrors: string[] = [];
  const failedRequests: string[] = [];

  /** A page of the shared browser in ZONE, recording script errors and failed requests. */
  async function newPage(viewport?: { width: number; height: number }): Promise<Page> {
    const pg = await browser.context.newPage();
    if (viewport) await pg.setViewportSize(viewport);
    const cdp = await browser.context.newCDPSession(pg);
    await cdp.send('Emulation.setTimezoneOverride', { timezoneId: ZONE });
    pg.on('pageerror', (e) => pageErrors.push(e.message));
    // Reads only: a refused POST (a sample event the flow would not receive) is an answer the page shows.
    pg.on('response', (r) => {
      if (r.status() >= 400 && r.request().method() === 'GET') failedRequests.push(`${r.status()} ${r.url()}`);
    });
    return pg;
  }
  /** Answers the page's next dialog (accept or dismiss) and resolves with its message. */
  function nextDialog(pg: Page, answer: 'accept' | 'dismiss'): Promise<string> {
    return new Promise((resolve) => {
      pg.once('dialog', (d: Dialog) => {
        resolve(d.message());
        void (answer === 'accept' ? d.accept() : d.dismiss());
      });
    });
  }
  async function finishedRun(flow: string, body: unknown = {}): Promise<string> {
    const started = await post(`${p.url}/api/flows/${flow}/runs`, body);
    const id: string = started.body.runId;
    await waitFor(`the ${flow} run to end`, async () => !['running', 'waiting'].includes((await p.runtime.engine.getRun(id))!.status));
    return id;
  }

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    p = await startProject({ flows: { ...runNowFlows(), 'ask.yaml': ASK, 'campaign.yaml': CAMPAIGN } });
    browser = await launchChromium({ width: 1280, height: 800 });
    page = await newPage();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await p?.close();
  });

  it('shows a loading state until the first answer, and "No runs yet." only for an answer without runs', async () => {
    await finishedRun('check-some');
    await page.goto(`${p.url}/#/flows`);
    await page.locator('tr[data-flow="check-some"]').waitFor();
    // Hold the run list's answer: until it comes, the page says it is loading.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const hold = async (route: Route) => {
      await held;
      await route.continue();
    };
    const runList = (u: URL) => u.pathname === '/api/runs';
    await page.route(runList, hold);
    await page.click('header nav a[data-page="runs"]');
    const loading = page.locator('main[aria-busy="true"] [data-loading]');
    await expect(loading.textContent()).resolves.toBe('Loading runs…');
    expect(await page.locator('main').textContent()).not.toContain('No runs');
    expect(await page.locator('tr[data-flow]').count()).toBe(0);
    release();
    await page.locator('tr[data-run^="check-some-"]').first().waitFor();
    expect(await page.locator('[data-loading]').count()).toBe(0);
    expect(await page.locator('main').getAttribute('aria-busy')).toBeNull();
    expect(await page.locator('[data-empty]').isVisible()).toBe(false);
    await page.unroute(runList, hold);

    // A filter no run matches says so; a run that then arrives live takes the place of the notice.
    await page.goto(`${p.url}/#/runs?flow=xss`);
    await page.locator('[data-empty]', { hasText: 'No runs match.' }).waitFor();
    await page.locator('#live.on').waitFor();
    await post(`${p.url}/api/flows/xss/runs`, {});
    await page.locator('tr[data-run^="xss-"]').waitFor();
    expect(await page.locator('[data-empty]').isVisible()).toBe(false);
  });

  it('shows every time as local time with its zone, and the ISO time in UTC as its tooltip', async () => {
    const id = await finishedRun('check-some');
    const now = Date.now();
    const identity = (await (await fetch(`${p.url}/api/instances`)).json()).instances[0].identity;
    await p.runtime.store.kv('shared:pauses').set(`${identity}:checkAccount`, {
      instance: 'default',
      identity,
      scope: 'checkAccount',
      since: now,
      until: now + 7_200_000,
      retryAfterMs: 7_200_000,
      reason: 'rate_limit_exceeded',
    });
    const pages: Array<[string, string]> = [
      ['#/runs', `tr[data-run="${id}"] time`],
      [`#/runs/${id}`, '[data-logs] time'],
      ['#/flows', 'tr[data-flow="check-some"] time'],
      ['#/instances', '[data-pause] time'],
    ];
    for (const [hash, wait] of pages) {
      await page.goto(`${p.url}/${hash}`);
      await page.locator(wait).first().waitFor({ timeout: 5000 });
      const times = await page.locator('main time').evaluateAll((els) => els.map((e) => [e.textContent, e.getAttribute('title')]));
      expect(times.length, hash).toBeGreaterThan(0);
      for (const [text, title] of times) {
        expect(title, hash).toMatch(ISO_UTC);
        expect(text, hash).toBe(shown(Date.parse(title!)));
      }
      // No other date format anywhere on the page: neither ISO nor the locale's 11/25/2026.
      const rest = await page.locator('main').evaluate((m) => {
        const copy = m.cloneNode(true) as HTMLElement;
        copy.querySelectorAll('time').forEach((t) => t.remove());
        return copy.textContent ?? '';
      });
      expect(rest, hash).not.toMatch(/\d{4}-\d\d-\d\dT\d\d|\d{1,2}\/\d{1,2}\/\d{4}|\d:\d\d:\d\d [AP]M/);
    }
    await page.screenshot({ path: path.join(ARTIFACTS, 'pages-instances-times.png'), fullPage: true });
    await post(`${p.url}/api/instances/default/pauses/lift`, {});
  });

  it('Cancel asks first, naming the run: dismissed, the run goes on; accepted, it is cancelled', async () => {
    const started = await post(`${p.url}/api/flows/ask/runs`, {});
    const id: string = started.body.runId;
    await page.goto(`${p.url}/#/runs/${id}`);
    const cancel = page.locator('button[data-action="cancel"]:not([disabled])');
    await cancel.waitFor();
    const dismissed = nextDialog(page, 'dismiss');
    await cancel.click();
    expect(await dismissed).toMatch(new RegExp(`^Cancel run ${id} of ask\\?`));
    await page.getByText('Not cancelled.').waitFor();
    const run = (await p.runtime.engine.getRun(id))!;
    expect(run.cancelRequested).not.toBe(true);
    expect(['running', 'waiting']).toContain(run.status);

    const accepted = nextDialog(page, 'accept');
    await cancel.click();
    await accepted;
    await page.locator('[data-run-status="cancelled"]').waitFor({ timeout: 30_000 });
  }, 60_000);

  /**
   * A page whose data answer is held in the browser until the page's own
   * event stream has carried `seen`: so a change lands between the server's
   * answer and the page's use of it, the moment a page would miss it.
   */
  async function pageWithHeldRead(
    read: (u: URL) => boolean,
  ): Promise<{ pg: Page; answered: Promise<void>; release: (seen: string) => Promise<void> }> {
    const pg = await newPage();
    // Every run event the page's EventSource receives, in order (the page's own listener comes after this one).
    await pg.addInitScript(() => {
      const Native = window.EventSource;
      const w = window as unknown as { __runEvents: unknown[]; EventSource: typeof EventSource };
      w.__runEvents = [];
      w.EventSource = class extends Native {
        constructor(url: string | URL, init?: EventSourceInit) {
          super(url, init);
          this.addEventListener('run', (e) => w.__runEvents.push(JSON.parse((e as MessageEvent<string>).data)));
        }
      };
    });
    let answered!: () => void;
    const answer = new Promise<void>((resolve) => (answered = resolve));
    let releaseRead!: () => void;
    const held = new Promise<void>((resolve) => (releaseRead = resolve));
    let reads = 0;
    await pg.route(read, async (route) => {
      if (reads++ > 0) return route.continue();
      const response = await route.fetch();
      answered();
      await held;
      await route.fulfill({ response });
    });
    return {
      pg,
      answered: answer,
      release: async (seen) => {
        await pg.waitForFunction(
          (want) =>
            (window as unknown as { __runEvents: Array<{ id: string; status: string }> }).__runEvents.some(
              (e) => `${e.id} ${e.status}` === want,
            ),
          seen,
        );
        releaseRead();
      },
    };
  }

  it('a run that ends while its page is loading shows as ended: the page misses no event between its read and its subscription', async () => {
    const id: string = (await post(`${p.url}/api/flows/ask/runs`, {})).body.runId;
    await waitFor('the ask run to wait', async () => (await p.runtime.engine.getRun(id))!.status === 'waiting');
    const held = await pageWithHeldRead((u) => u.pathname === `/api/runs/${encodeURIComponent(id)}`);
    try {
      await held.pg.goto(`${p.url}/#/runs/${encodeURIComponent(id)}`);
      await held.answered; // the server has answered "waiting"
      await post(`${p.url}/api/runs/${id}/cancel`, {});
      await held.release(`${id} cancelled`);
      await held.pg.locator('[data-run-status="cancelled"]').waitFor();
    } finally {
      await held.pg.close();
    }
  });

  it('a run that starts while the run list is loading appears in it', async () => {
    const held = await pageWithHeldRead((u) => u.pathname === '/api/runs');
    try {
      await held.pg.goto(`${p.url}/#/runs?flow=check-some`);
      await held.answered;
      const id = await finishedRun('check-some');
      const status = (await p.runtime.engine.getRun(id))!.status;
      await held.release(`${id} ${status}`);
      await held.pg.locator(`tr[data-run="${id}"]`).waitFor();
    } finally {
      await held.pg.close();
    }
  });

  it('Lift asks first, naming the instance and its pause: dismissed, the pause stays; accepted, it is lifted', async () => {
    const identity = (await (await fetch(`${p.url}/api/instances`)).json()).instances[0].identity;
    const now = Date.now();
    const pauses = p.runtime.store.kv('shared:pauses');
    await pauses.set(`${identity}:checkAccount`, {
      instance: 'default',
      identity,
      scope: 'checkAccount',
      since: now,
      until: now + 3_600_000,
      retryAfterMs: 3_600_000,
      reason: 'rate_limit_exceeded',
    });
    await page.goto(`${p.url}/#/instances`);
    const lift = page.locator('button[data-lift="default"]');
    await lift.waitFor();
    const dismissed = nextDialog(page, 'dismiss');
    await lift.click();
    const ask = await dismissed;
    expect(ask).toMatch(/^Lift the pause of instance default\?/);
    expect(ask).toContain(`checkAccount: rate_limit_exceeded until ${shown(now + 3_600_000)}`);
    await page.getByText('Not lifted.').waitFor();
    expect(await pauses.entries()).toHaveLength(1);

    const accepted = nextDialog(page, 'accept');
    await lift.click();
    await accepted;
    await page.getByText('no pauses').waitFor();
    expect(await pauses.entries()).toEqual([]);
  });

  it('"not asked" on the Instances page says what it means and when it changes', async () => {
    // As msgflow ui serves it: the local service is not opened, so the local instance is not asked.
    const ui = await createUiServer({ runtime: p.runtime, port: 0, probeLocal: false });
    try {
      await page.goto(`${ui.url}/#/instances`);
      const state = page.locator('[data-state="default"]');
      await state.waitFor();
      expect(await state.textContent()).toMatch(/^not asked/);
      const explain = page.locator('[data-explain="default"]');
      expect(await explain.isVisible()).toBe(true);
      const text = (await explain.textContent())!;
      expect(text).toMatch(/msgflow ui/);
      expect(text).toMatch(/local service/);
      expect(text).toMatch(/msgflow start .*asks it and shows its state/);
      await page.screenshot({ path: path.join(ARTIFACTS, 'pages-not-asked.png'), fullPage: true });
    } finally {
      await ui.close();
    }
  });

  it('a finished step shows each outcome as its own segment of a full bar, and the accounts plot a colour per outcome with a legend', async () => {
    const id = await finishedRun('check-some');
    await page.goto(`${p.url}/#/runs/${id}`);
    const step = page.locator('tr[data-step="check"]');
    await step.locator('[data-outcome]').first().waitFor();
    // 8 rows: 6 checked (3 exist, 3 none), '12' invalid, one number twice.
    const bar = await step.locator('.bar').boundingBox();
    const segments = await step
      .locator('[data-outcome]')
      .evaluateAll((els) => els.map((e) => [e.getAttribute('data-outcome'), e.getBoundingClientRect().width]));
    expect(segments.map(([k]) => k)).toEqual(['done', 'invalid', 'duplicate']);
    const widths = Object.fromEntries(segments) as Record<string, number>;
    expect(widths.done! + widths.invalid! + widths.duplicate!).toBeCloseTo(bar!.width, 0);
    expect(widths.done! / bar!.width).toBeCloseTo(6 / 8, 2);
    expect(widths.invalid! / bar!.width).toBeCloseTo(1 / 8, 2);
    const counts = await step.locator('[data-count]').evaluateAll((els) => els.map((e) => [e.getAttribute('data-count'), e.textContent]));
    expect(Object.fromEntries(counts)).toEqual({ done: '6', failed: '0', invalid: '1', duplicate: '1', total: '8' });

    const plot = page.locator('[data-plot="Accounts: check"]');
    const colours: Record<string, string> = {};
    for (const k of ['exists', 'none', 'invalid', 'failed']) {
      const fill = await plot.locator(`[data-bar="${k}"] .fill`).evaluate((e) => getComputedStyle(e).backgroundColor);
      const legend = plot.locator(`[data-legend="${k}"]`);
      expect(await legend.textContent()).toContain(k);
      expect(await legend.locator('.swatch').evaluate((e) => getComputedStyle(e).backgroundColor)).toBe(fill);
      colours[k] = fill;
    }
    expect(new Set(Object.values(colours)).size).toBe(4);
    const heights = await plot.locator('.fill').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().height));
    expect(heights[0]).toBeCloseTo(heights[1]!, 0); // 3 exist, 3 none
    expect(heights[2]! * 3).toBeCloseTo(heights[0]!, 0); // 1 invalid
    await page.screenshot({ path: path.join(ARTIFACTS, 'pages-run.png'), fullPage: true });
  });

  it("a campaign's run page plots its funnel per variant, each stage in its own colour with a legend", async () => {
    const id = await finishedRun('campaign');
    await page.goto(`${p.url}/#/runs/${id}`);
    await page.locator('[data-plot^="Funnel: send · "]').first().waitFor();
    const plots = page.locator('[data-plot^="Funnel: send · "]');
    const names = await plots.evaluateAll((els) => els.map((e) => e.getAttribute('data-plot')));
    expect(names.every((n) => /^Funnel: send · (a|b)$/.test(n!))).toBe(true);
    const value = async (bar: string) =>
      (await plots.locator(`[data-bar="${bar}"] .value`).allTextContents()).reduce((sum, v) => sum + Number(v), 0);
    // Every recipient in one variant's funnel: queued and sent.
    expect(await value('queued')).toBe(4);
    expect(await value('sent')).toBe(4);
    const first = plots.first();
    const fills: string[] = [];
    for (const k of ['queued', 'sent', 'replied', 'optedOut', 'unknown']) {
      expect(await first.locator(`[data-legend="${k}"]`).count()).toBe(1);
      fills.push(await first.locator(`[data-bar="${k}"] .fill`).evaluate((e) => getComputedStyle(e).backgroundColor));
    }
    expect(new Set(fills).size).toBe(5);
  });

  it('Run now on a notification-triggered flow takes a sample event and starts the run with it', async () => {
    await page.goto(`${p.url}/#/flows`);
    await page.click('button[data-run="greet"]');
    const form = page.locator('form[data-flow="greet"]');
    await form.locator('fieldset[data-event="greet"]').waitFor();
    await form.locator('input[name="event.chatId"]').fill('79001112233@c.us');
    await form.locator('input[name="event.text"]').fill('hello');
    await page.screenshot({ path: path.join(ARTIFACTS, 'pages-sample-event.png'), fullPage: true });
    await form.locator('button[type=submit]').click();
    // A text the flow's filter does not match: refused, and the text field is the one to fix.
    const alert = form.locator('[role=alert]');
    await alert.filter({ hasText: /\S/ }).waitFor();
    expect(await alert.textContent()).toMatch(/^event\.messageData: text "hello" does not match \/\^\(hi\|menu\)\$\/i/);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('event.text');
    await form.locator('input[name="event.text"]').fill('hi');
    await form.locator('button[type=submit]').click();
    await page.waitForURL(/#\/runs\/greet-/);
    await page.locator('[data-run-status="succeeded"]').waitFor({ timeout: 20_000 });
    const id = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    // The run page shows the event the run started with.
    expect(JSON.parse((await page.locator('[data-event-json]').textContent())!)).toMatchObject({
      instance: 'default',
      senderData: { chatId: '79001112233@c.us', senderName: 'Sample sender' },
    });
    expect((await p.runtime.engine.getRun(id))!.event).toMatchObject({
      senderData: { chatId: '79001112233@c.us' },
      messageData: { textMessageData: { textMessage: 'hi' } },
    });
  });

  it('Run now on a flow whose send window is closed says until when it waits, and asks first', async () => {
    const until = (await (await fetch(`${p.url}/api/flows/brochure/preflight`)).json()).waits[0].until as number;
    await page.goto(`${p.url}/#/flows`);
    await page.click('button[data-run="brochure"]');
    const form = page.locator('form[data-flow="brochure"]');
    const notice = form.locator('[data-wait-notice="brochure"]');
    await notice.locator('time').first().waitFor();
    expect(await notice.textContent()).toContain(`Runs now but waits until ${shown(until)}: step send`);

    const dismissed = nextDialog(page, 'dismiss');
    await form.locator('button[type=submit]').click();
    expect(await dismissed).toMatch(
      new RegExp(`^brochure runs now but waits until ${shown(until).replace('+', '\\+')} \\(step send: send window .* is closed\\)`),
    );
    await form.locator('[role=alert]', { hasText: 'Not started.' }).waitFor();
    expect(await p.runtime.engine.listRuns({ flow: 'brochure' })).toEqual([]);

    const accepted = nextDialog(page, 'accept');
    await form.locator('button[type=submit]').click();
    await accepted;
    await page.waitForURL(/#\/runs\/brochure-/);
    await page.locator('[data-run-status="waiting"]').waitFor({ timeout: 20_000 });
    const [run] = await p.runtime.engine.listRuns({ flow: 'brochure' });
    expect(run!.waitingUntil).toBe(until);
    await post(`${p.url}/api/runs/${run!.id}/cancel`, {});
  }, 30_000);

  it('fits a phone: on a 375 px wide screen no page scrolls sideways', async () => {
    const id = await finishedRun('check-some');
    const phone = await newPage({ width: 375, height: 740 });
    try {
      const pages: Array<[string, string]> = [
        ['flows', 'tr[data-flow="check-some"]'],
        ['runs', 'tr[data-run]'],
        [`runs/${id}`, '[data-plot^="Accounts"]'],
        ['instances', 'tr[data-instance="default"]'],
      ];
      for (const [route, wait] of pages) {
        await phone.goto(`${p.url}/#/${route}`);
        await phone.locator(wait).first().waitFor();
        if (route === 'flows') await phone.click('button[data-run="greet"]');
        await phone.screenshot({
          path: path.join(ARTIFACTS, `phone-${route.split('/')[0]}${route.includes('/') ? '-run' : ''}.png`),
          fullPage: true,
        });
        const { scroll, width } = await phone.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
        expect(scroll, route).toBeLessThanOrEqual(width);
      }
    } finally {
      await phone.close();
    }
  });

  it('asks for nothing that is not there (the favicon included), and ran without a script error', async () => {
    await page.goto(`${p.url}/#/runs`);
    const icon = await page.locator('link[rel="icon"]').getAttribute('href');
    const res = await page.request.get(`${p.url}${icon}`);
    expect(res.status()).toBe(200);
    expect((await page.request.get(`${p.url}/favicon.ico`)).status()).toBe(200);
    expect(failedRequests).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
