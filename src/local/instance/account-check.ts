/**
 * checkAccount of one instance: answers from the network's accounts, keeps a
 * cache (used unless `force`), and imitates the messenger's protection
 * against number scanning: more distinct numbers than `checkAccountLimit`
 * allows within its window pause all checks of the instance for
 * `retryAfterSeconds`.
 *
 * Cache, window and pause live in one keyed log, checks.jsonl (see
 * persist/keyed-log.ts); a lookup appends one line:
 *
 *     {"k":79001112233,"t":1767225600000}     has an account, no username (t = when looked up)
 *     {"k":79001112233,"n":1767225600000}     no account, or a hidden number
 *     {"k":79001112233,"v":{"e":1,"u":"@alice","t":1767225600000}}
 *     {"k":"user:alice","v":{"e":1,"p":79001112233,"u":"@alice","t":1767225600000}}
 *     {"k":"#","w":1767225600000}             a new window starts (and any pause is over)
 *     {"k":"#","p":1767232800000}             checks pause until then
 *
 * In memory a number's answer is one number (t, negative for "no account")
 * in typed arrays (CheckCache), so a million cached numbers cost 16-32 MB. A number is in the current
 * window when it was looked up since the window started, so the window needs
 * no list of its own.
 */
import path from 'node:path';
import { z } from 'zod';
import type { LocalInstanceConfig } from '../config.js';
import type { CheckAccountResponse, ParsedRequest, RateLimitBody } from '../../api/types.js';
import { personalChatId } from '../../api/chat-id.js';
import type { Clock } from '../../util/clock.js';
import type { Network } from '../network.js';
import { corruptAt } from '../persist/append-log.js';
import { KeyedLog, keyedLine, type Key, type KeyedEntry, type KeyedState } from '../persist/keyed-log.js';
import { KeyedMutex } from '../persist/keyed-mutex.js';
import { NumberMap } from '../../util/number-map.js';
import { readLegacyDoc, retireLegacyDoc } from '../persist/legacy-doc.js';

export type CheckAccountAnswer = CheckAccountResponse | RateLimitBody;

/** A cached answer with a username, or for a username target. */
interface Detailed {
  /** 1: has an account. */
  e: 0 | 1;
  /** Phone number (username targets). */
  p?: number;
  u?: string;
  /** When looked up, ms. */
  t: number;
}

/** number: t (looked up at), negative when there is no account; string: a Detailed as JSON. */
type Cached = number | string;

const CONTROL = '#';

const LegacyChecks = z.strictObject({
  cache: z.record(
    z.string().regex(/^(phone:\d{1,15}|user:.+)$/, { error: "expected 'phone:<digits>' or 'user:<name>'" }),
    z.strictObject({
      exist: z.boolean(),
      chatId: z.string(),
      username: z.string().optional(),
      phoneNumber: z.number().optional(),
      checkedAt: z.number(),
    }),
  ),
  window: z.strictObject({ startedAt: z.number(), targets: z.array(z.string()) }).nullable(),
  pausedUntil: z.number().nullable(),
});

function lookedUpAt(c: Cached): number {
  return typeof c === 'number' ? Math.abs(c) : (JSON.parse(c) as Detailed).t;
}

/**
 * The cached answers: a number's plain answer (a number keyed by a number,
 * nearly every entry at a million checks) in a {@link NumberMap}, 16-32
 * bytes where a Map entry with a boxed phone number and time cost ~80;
 * usernames and detailed answers in a Map.
 */
class CheckCache {
  private readonly plain = new NumberMap();
  private readonly other = new Map<Key, Cached>();

  get size(): number {
    return this.plain.size + this.other.size;
  }

  get(key: Key): Cached | undefined {
    return (NumberMap.fits(key) ? this.plain.get(key) : undefined) ?? this.other.get(key);
  }

  set(key: Key, value: Cached): void {
    if (NumberMap.fits(key) && typeof value === 'number') {
      this.other.delete(key);
      this.plain.set(key, value);
    } else {
      if (NumberMap.fits(key)) this.plain.delete(key);
      this.other.set(key, value);
    }
  }

  *entries(): IterableIterator<[Key, Cached]> {
    yield* this.plain.entries();
    yield* this.other.entries();
  }
}

class ChecksState implements KeyedState {
  readonly cache = new CheckCache();
  window: { startedAt: number; count: number } | null = null;
  pausedUntil: number | null = null;

  get liveLines(): number {
    return this.cache.size + 2;
  }

  apply(key: Key, field: string, raw: string | number, where: string): void {
    if (key === CONTROL) {
      const v = Number(raw);
      if (!Number.isFinite(v)) throw corruptAt(where, `'${field}' must be a time in ms`);
      if (field === 'w') {
        this.window = { startedAt: v, count: 0 };
        this.pausedUntil = null;
      } else if (field === 'p') this.pausedUntil = v;
      else throw corruptAt(where, `unknown field '${field}' (expected w or p)`);
      return;
    }
    let value: Cached;
    if (field === 't' || field === 'n') {
      const t = Number(raw);
      if (!(t > 0) || typeof key !== 'number') throw corruptAt(where, `'${field}' must be a time in ms, keyed by a phone number`);
      value = field === 't' ? t : -t;
    } else if (field === 'v') {
      if (typeof raw !== 'string' || raw[0] !== '{') throw corruptAt(where, "'v' must be an object");
      value = raw;
    } else {
      throw corruptAt(where, `unknown field '${field}' (expected t, n or v)`);
    }
    const prev = this.cache.get(key);
    this.cache.set(key, value);
    const w = this.window;
    if (w && lookedUpAt(value) >= w.startedAt && !(prev !== undefined && lookedUpAt(prev) >= w.startedAt)) w.count++;
  }

  *snapshot(): Iterable<string> {
    if (this.window) yield keyedLine(CONTROL, 'w', String(this.window.startedAt));
    for (const [k, v] of this.cache.entries()) yield cacheLine(k, v);
    if (this.pausedUntil !== null) yield keyedLine(CONTROL, 'p', String(this.pausedUntil));
  }
}

function cacheEntry(key: Key, v: Cached): KeyedEntry {
  if (typeof v === 'string') return [key, 'v', v];
  return v > 0 ? [key, 't', String(v)] : [key, 'n', String(-v)];
}

function cacheLine(key: Key, v: Cached): string {
  return keyedLine(...cacheEntry(key, v));
}

export class AccountChecker {
  private readonly mutex = new KeyedMutex<Key>();
  /** Lookups of new targets being written: they count against the window already. */
  private reserved = 0;

  private constructor(
    private readonly state: ChecksState,
    private readonly log: KeyedLog,
    private readonly limit: LocalInstanceConfig['checkAccountLimit'],
    private readonly network: Network,
    private readonly clock: Clock,
  ) {}

  /**
   * Loads checks.jsonl; on the first start after an upgrade, converts
   * checks.json (earlier releases) into it.
   * @throws MsgflowError LOCAL_DATA_INVALID naming the file (and line or key)
   */
  static async open(dir: string, shownDir: string, limit: LocalInstanceConfig['checkAccountLimit'], network: Network, clock: Clock) {
    const state = new ChecksState();
    const log = new KeyedLog(path.join(dir, 'checks.jsonl'), path.join(shownDir, 'checks.jsonl'), state);
    const legacyFile = path.join(dir, 'checks.json');
    if (!(await log.load())) {
      const old = await readLegacyDoc(legacyFile, path.join(shownDir, 'checks.json'), LegacyChecks);
      if (old) {
        if (old.window) state.apply(CONTROL, 'w', String(old.window.startedAt), legacyFile);
        for (const [k, c] of Object.entries(old.cache)) {
          const key: Key = k.startsWith('phone:') ? Number(k.slice(6)) : k;
          const [, field, raw] = cacheEntry(key, toCached(key, c.exist, c.checkedAt, c.username, c.phoneNumber));
          state.apply(key, field, raw, legacyFile);
        }
        if (old.pausedUntil !== null) state.apply(CONTROL, 'p', String(old.pausedUntil), legacyFile);
        await log.compact();
      }
    }
    await retireLegacyDoc(legacyFile);
    return new AccountChecker(state, log, limit, network, clock);
  }

  /** @throws MsgflowError LOCAL_WRITE_FAILED when the disk refused (nothing changed). */
  async check(req: ParsedRequest<'checkAccount'>): Promise<CheckAccountAnswer> {
    const key: Key = req.phoneNumber !== undefined ? req.phoneNumber : `user:${req.username!.toLowerCase()}`;
    const s = this.state;
    const now = this.clock.now();
    if (s.pausedUntil !== null) {
      if (now < s.pausedUntil) return rateLimited(Math.ceil((s.pausedUntil - now) / 1000));
      s.pausedUntil = null;
      s.window = null;
    }
    const cached = s.cache.get(key);
    if (cached !== undefined && !req.force) return present(key, cached, true);
    return this.mutex.run(key, () => this.lookupOnServer(key, req));
  }

  /** A lookup on the messenger's server: it counts against the window. */
  private async lookupOnServer(key: Key, req: ParsedRequest<'checkAccount'>): Promise<CheckAccountAnswer> {
    const s = this.state;
    const now = this.clock.now();
    if (s.pausedUntil !== null && now < s.pausedUntil) return rateLimited(Math.ceil((s.pausedUntil - now) / 1000));
    const cachedNow = s.cache.get(key);
    // A request that waited for another lookup of the same target takes its answer.
    if (cachedNow !== undefined && !req.force) return present(key, cachedNow, true);
    const lines: KeyedEntry[] = [];
    const windowMs = this.limit.windowMinutes * 60_000;
    if (!s.window || now - s.window.startedAt >= windowMs) {
      // Set now, not after the write, so concurrent lookups share one window.
      s.window = { startedAt: now, count: 0 };
      lines.push([CONTROL, 'w', String(now)]);
    }
    const w = s.window;
    const inWindow = cachedNow !== undefined && lookedUpAt(cachedNow) >= w.startedAt;
    if (!inWindow && w.count + this.reserved >= this.limit.numbers) {
      const until = now + this.limit.retryAfterSeconds * 1000;
      lines.push([CONTROL, 'p', String(until)]);
      await this.log.write(lines);
      return rateLimited(this.limit.retryAfterSeconds);
    }
    const value = this.lookup(key, req, now);
    lines.push(cacheEntry(key, value));
    if (!inWindow) this.reserved++;
    try {
      await this.log.write(lines);
    } finally {
      if (!inWindow) this.reserved--;
    }
    return present(key, value, false);
  }

  private lookup(key: Key, req: ParsedRequest<'checkAccount'>, now: number): Cached {
    const account =
      req.phoneNumber !== undefined ? this.network.accountByPhone(req.phoneNumber) : this.network.accountByUsername(req.username!);
    if (!account || account.hidden) return toCached(key, false, now);
    return toCached(key, true, now, account.username ?? '', account.phone);
  }
}

function toCached(key: Key, exist: boolean, t: number, username?: string, phone?: number): Cached {
  if (typeof key === 'number') {
    if (!exist) return -t;
    if (!username) return t;
    return JSON.stringify({ e: 1, u: username, t } satisfies Detailed);
  }
  return JSON.stringify(exist ? ({ e: 1, p: phone, u: username ?? '', t } satisfies Detailed) : ({ e: 0, t } satisfies Detailed));
}

function present(key: Key, c: Cached, fromCache: boolean): CheckAccountResponse {
  // No account or a hidden number: these two fields and nothing else.
  if (typeof c === 'number') {
    if (c < 0) return { exist: false, chatId: '' };
    return { exist: true, chatId: personalChatId(key as number), username: '', phoneNumber: key as number, fromCache };
  }
  const d = JSON.parse(c) as Detailed;
  if (!d.e) return { exist: false, chatId: '' };
  const phone = typeof key === 'number' ? key : d.p!;
  return { exist: true, chatId: personalChatId(phone), username: d.u ?? '', phoneNumber: phone, fromCache };
}

function rateLimited(retryAfter: number): RateLimitBody {
  return { status: false, data: { status: 'fail', reason: 'rate_limit_exceeded', retryAfter } };
}
