/**
 * local.network.population: numbers with a prefix have an
 * account with probability `share`, decided from the number (the same in
 * every run and process); explicit accounts win.
 */
import { describe, expect, it } from 'vitest';
import { LocalSchema, NetworkSchema } from '../../src/local/config.js';
import { Network, numberHash } from '../../src/local/network.js';
import { conformanceConfig, startLocal } from '../support/local-service.js';

const net = (population: unknown[], accounts: unknown[] = []) => new Network(NetworkSchema.parse({ accounts, population }));

describe('network population', () => {
  it('is deterministic: fixed answers for fixed numbers, equal across instances', () => {
    // Pinned values: a change of the hash would change every saved setup.
    expect(numberHash('79200000000')).toBe(0.7006369803566486);
    const a = net([{ prefix: '7920', share: 0.6 }]);
    const b = net([{ prefix: 7920, share: 0.6 }]);
    const first = Array.from({ length: 20 }, (_, i) => a.hasAccount(`${79200000000 + i}@c.us`));
    expect(Array.from({ length: 20 }, (_, i) => b.hasAccount(`${79200000000 + i}@c.us`))).toEqual(first);
    expect(first.map((x) => (x ? 1 : 0)).join('')).toBe(PINNED);
  });

  it('gives about `share` of the numbers an account (10,000 numbers, ±2 %), none outside the prefix', () => {
    const n = net([
      { prefix: '7920', share: 0.6 },
      { prefix: '79201', share: 0.1 },
    ]);
    let wide = 0;
    let narrow = 0;
    for (let i = 0; i < 10_000; i++) {
      if (n.hasAccount(`${79200000000 + i}@c.us`)) wide++; // 79200..., not 79201...
      if (n.hasAccount(`${79201000000 + i}@c.us`)) narrow++; // the longer prefix decides
    }
    expect(wide / 10_000).toBeGreaterThan(0.58);
    expect(wide / 10_000).toBeLessThan(0.62);
    expect(narrow / 10_000).toBeGreaterThan(0.08);
    expect(narrow / 10_000).toBeLessThan(0.12);
    expect(n.hasAccount('79300000000@c.us')).toBe(false);
    expect(net([{ prefix: '7920', share: 0 }]).hasAccount('79200000001@c.us')).toBe(false);
    expect(net([{ prefix: '7920', share: 1 }]).hasAccount('79200000001@c.us')).toBe(true);
  });

  it('explicit accounts win: listed numbers exist (hidden stays hidden) whatever the hash says', () => {
    const none = net(
      [{ prefix: '7920', share: 0 }],
      [
        { phone: 79200000005, name: 'Eve' },
        { phone: 79200000006, hidden: true },
      ],
    );
    expect(none.hasAccount('79200000005@c.us')).toBe(true);
    expect(none.accountByPhone(79200000005)?.name).toBe('Eve');
    expect(none.accountByPhone(79200000006)?.hidden).toBe(true);
    expect(none.hasAccount('79200000007@c.us')).toBe(false);
  });

  it('refuses a share outside 0..1 and a prefix that is not digits', () => {
    expect(() => NetworkSchema.parse({ population: [{ prefix: '7920', share: 1.5 }] })).toThrow(/share from 0 to 1/);
    expect(() => NetworkSchema.parse({ population: [{ prefix: '79x', share: 0.5 }] })).toThrow(/digits/);
  });

  it('the service answers checkAccount and addContact from the population', async () => {
    const h = await startLocal({
      kind: 'in-process',
      config: conformanceConfig((raw) => {
        (raw.network as Record<string, unknown>).population = [{ prefix: '7920', share: 0.6 }];
        (raw.instances as { checkAccountLimit: unknown }[])[0]!.checkAccountLimit = {
          numbers: 1000,
          windowMinutes: 10,
          retryAfterSeconds: 60,
        };
      }),
    });
    try {
      const n = new Network(LocalSchema.parse({ network: { population: [{ prefix: '7920', share: 0.6 }] } }).network);
      for (let i = 0; i < 30; i++) {
        const phone = 79200000000 + i;
        const has = n.hasAccount(`${phone}@c.us`);
        const r = (await h.call('checkAccount', { phoneNumber: phone })).body as { exist: boolean };
        expect(r.exist, String(phone)).toBe(has);
        const add = await h.call('addContact', { chatId: `${phone}@c.us`, firstName: 'P' });
        expect(add.statusCode, String(phone)).toBe(has ? 200 : 404);
      }
    } finally {
      await h.close();
    }
  });
});

/** hasAccount of 79200000000..79200000019 with share 0.6, as first computed. */
const PINNED = '01111100110110111101';
