/**
 * The health guard's cost per send, and that it does not grow: the durable
 * windows of one instance (actions/broadcast-guard.ts SenderHealth over the
 * memory store, all four thresholds) fed N sends, each looked up and checked
 * as before a real send (its outcome known, its opt-out and reply looked at
 * once their `after` passed), for campaigns of 10,000 and 100,000 sends and
 * windows of 50 and 5,000 sends. The peer, in the same rounds, is the same
 * loop with the windows left out (the store write of the send alone), so the
 * difference is what the guard adds. CPU time per send (process.cpuUsage),
 * median of the rounds; the load average is printed beside the figures.
 *
 *   npm run bench:guard -- [--rounds 5]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { GuardSchema } from '../src/actions/broadcast-pool.js';
import { SenderHealth, type HealthEntry, type HealthLookups } from '../src/actions/broadcast-guard.js';
import { sharedState } from '../src/engine/shared.js';
import { createMemoryStore } from '../src/store/memory-store.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const ROUNDS = Number(values.rounds);

/** Every 10th recipient has no account, every 20th opts out, every 5th replies: no threshold trips. */
const look: HealthLookups = {
  outcome: async (e: HealthEntry) => (Number(e.idMessage.slice(1)) % 10 === 0 ? 'noAccount' : 'ok'),
  optedOut: async (e: HealthEntry) => Number(e.idMessage.slice(1)) % 20 === 0,
  replied: async (e: HealthEntry) => Number(e.idMessage.slice(1)) % 5 === 0,
};

/** CPU µs per send of N sends through the windows (or, `peer`, the send's record alone). */
async function run(n: number, window: number, peer: boolean): Promise<number> {
  const store = createMemoryStore();
  const ctx = { shared: (ns: Parameters<typeof sharedState>[1]) => sharedState(store, ns) };
  const guard = GuardSchema.parse({
    noAccount: { maxShare: 0.5, window, minSample: 10 },
    failed: { maxShare: 0.5, window, minSample: 10 },
    optOut: { maxRate: 0.5, after: '1m', window, minSample: 10 },
    replies: { minRate: 0.01, after: '1m', window, minSample: 10 },
  });
  const h = await SenderHealth.load(ctx, 'inst-a', 'campaign:bench', guard, 0);
  const records = sharedState(store, 'bench-records');
  const started = process.cpuUsage();
  // A send every second: after 60 of them, each check has one send whose `after` passed.
  for (let i = 0; i < n; i++) {
    const at = i * 1000;
    if (peer) await records.set(`r:${i}`, { chatId: `${i}@c.us`, idMessage: `m${i}`, sentAt: at });
    else {
      await h.check(look, at);
      await h.sent(`${i}@c.us`, `m${i}`, at);
    }
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / n;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(
  `health guard per send (CPU µs, median of ${ROUNDS} rounds), load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
console.log('sends    window  guard µs  peer µs  guard/peer');
for (const n of [10_000, 100_000]) {
  for (const window of [50, 5_000]) {
    const ours: number[] = [];
    const theirs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      ours.push(await run(n, window, false));
      theirs.push(await run(n, window, true));
    }
    const [g, p] = [median(ours), median(theirs)];
    console.log(
      `${String(n).padStart(7)}  ${String(window).padStart(6)}  ${g.toFixed(1).padStart(8)}  ${p.toFixed(1).padStart(7)}  ${(g / p).toFixed(1).padStart(10)}`,
    );
  }
}
console.log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
