import { describe, expect, it } from 'vitest';
import { messagesBroadcast } from '../../src/actions/messages-broadcast.js';
import { recipientOpening, RecipientTimeSchema, recipientZone, zoneOfNumber } from '../../src/actions/recipient-time.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { drainQueue, localConfig, tempDir, closedAfterEach } from '../support/local-service.js';

const { local, virtualClock } = closedAfterEach();

const weekdays = RecipientTimeSchema.parse({ hours: { default: '09:00-18:00', sat: '10:00-14:00', sun: 'off' }, zone: 'UTC' });

/** The wall clock of `at` in `tz`: weekday and HH:MM. */
const wall = (at: number, tz: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone: tz, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(at);

describe('recipient time', () => {
  it("a recipient's zone is its row's column, else its number's calling code, else the fallback", () => {
    expect(recipientZone(weekdays, '4915112345678@c.us', { tz: 'Asia/Tokyo' }, 'UTC')).toBe('Asia/Tokyo');
    expect(recipientZone(weekdays, '4915112345678@c.us', {}, 'UTC')).toBe('Europe/Berlin');
    expect(recipientZone(weekdays, '77011234567@c.us', {}, 'UTC')).toBe('Asia/Almaty');
    expect(recipientZone(weekdays, '79001112233@c.us', { tz: 'Mars/Olympus' }, 'UTC')).toBe('Europe/Moscow');
    expect(recipientZone(weekdays, '99912345@c.us', {}, 'Europe/Paris')).toBe('UTC');
    expect(recipientZone({ ...weekdays, zone: undefined }, '99912345@c.us', {}, 'Europe/Paris')).toBe('Europe/Paris');
    expect(recipientZone(weekdays, '120363043968066561@g.us', {}, 'Europe/Paris')).toBe('UTC');
    expect(zoneOfNumber('380501234567')).toBe('Europe/Kyiv');
  });

  it('per weekday: inside its hours now, else the start of the next hours in its zone (a day off skipped, DST honoured)', () => {
    const berlin = { tz: 'Europe/Berlin' };
    const at = (iso: string) => Date.parse(iso);
    const chat = '79001112233@c.us';
    // Wednesday 10:00 Berlin: open
    expect(recipientOpening(weekdays, chat, berlin, at('2026-03-04T09:00:00Z'), 'UTC')).toBe(at('2026-03-04T09:00:00Z'));
    // Wednesday 07:00 Berlin: 09:00 the same day
    expect(recipientOpening(weekdays, chat, berlin, at('2026-03-04T06:00:00Z'), 'UTC')).toBe(at('2026-03-04T08:00:00Z'));
    // Friday 19:00 Berlin: Saturday 10:00
    expect(recipientOpening(weekdays, chat, berlin, at('2026-03-06T18:00:00Z'), 'UTC')).toBe(at('2026-03-07T09:00:00Z'));
    // Saturday 15:00 Berlin: Sunday is off, Monday 09:00
    expect(recipientOpening(weekdays, chat, berlin, at('2026-03-07T14:00:00Z'), 'UTC')).toBe(at('2026-03-09T08:00:00Z'));
    // Saturday 28 March 2026 15:00 CET: Monday 30 March 09:00 is CEST (UTC+2)
    expect(recipientOpening(weekdays, chat, berlin, at('2026-03-28T14:00:00Z'), 'UTC')).toBe(at('2026-03-30T07:00:00Z'));
    expect(recipientOpening(undefined, chat, berlin, 5, 'UTC')).toBe(5);
  });

  it('hours are checked when the flow is loaded: a range backwards, an unknown day, or no day with hours are refused', () => {
    expect(RecipientTimeSchema.safeParse({ hours: { mon: '18:00-09:00' } }).error?.issues[0]?.message).toMatch(
      /start must be before the stop/,
    );
    expect(RecipientTimeSchema.safeParse({ hours: { monday: '09:00-18:00' } }).success).toBe(false);
    expect(RecipientTimeSchema.safeParse({ hours: { default: 'off' } }).error?.issues[0]?.message).toMatch(/no day has hours/);
    expect(RecipientTimeSchema.safeParse({ hours: { mon: '9-5' } }).success).toBe(false);
  });

  it("messages.broadcast never sends outside a recipient's hours in its own zone; the others are sent meanwhile", async () => {
    const dir = await tempDir();
    // Monday 2 March 2026, 06:00 UTC: 15:00 in Tokyo, 07:00 in Berlin, 01:00 in New York, 19:00 in Auckland.
    const clock = virtualClock(Date.parse('2026-03-02T06:00:00Z'), { timeZone: 'UTC' });
    const base = localConfig();
    const population = ['49', '81', '1', '7'].map((prefix) => ({ prefix, share: 1 }));
    const l = await local({ dir, clock, config: { ...base, network: { ...base.network, population } } });
    const people = [
      { phone: '4915112345678', name: 'Berlin' },
      { phone: '819012345678', name: 'Tokyo' },
      { phone: '12125550100', name: 'New York' },
      { phone: '79001112233', name: 'Auckland', tz: 'Pacific/Auckland' },
    ];
    const zones = ['Europe/Berlin', 'Asia/Tokyo', 'America/New_York', 'Pacific/Auckland'];
    const t = createActionTestContext({ client: l.client, clock, store: createMemoryStore(), baseDir: dir });
    const s = await runAction(messagesBroadcast, t, {
      recipients: people,
      message: { text: 'Good day, ${{ row.name }}' },
      recipientTime: { hours: { default: '09:00-18:00', sat: 'off', sun: 'off' } },
      follow: { deadline: 0 },
      reconcile: { sendInterval: 500, grace: 1000, clockSkew: 2000 },
    });
    expect(s).toMatchObject({ sent: 4, notSent: 0 });
    await drainQueue(l);
    const sentAt: string[] = [];
    for (const [i, p] of people.entries()) {
      const [m] = await l.client.getChatHistory({ chatId: `${p.phone}@c.us` });
      expect(m!.textMessage).toBe(`Good day, ${p.name}`);
      sentAt.push(wall(m!.timestamp * 1000, zones[i]!));
    }
    // Tokyo at once; Berlin, New York and Auckland as their 09:00 comes (each on its own wall clock, Monday or Tuesday).
    expect(sentAt[1]).toMatch(/^Mon 15:0\d$/);
    expect(sentAt[0]).toMatch(/^Mon 09:0\d$/);
    expect(sentAt[2]).toMatch(/^Mon 09:0\d$/);
    expect(sentAt[3]).toMatch(/^Tue 09:0\d$/);
    expect(t.waits.map((w) => w.reason)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^recipients wait until 2026-03-02T08:00:00.000Z/)]),
    );
  });
});
