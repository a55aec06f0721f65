/**
 * checkAccount of one instance: answers from the network's accounts, keeps a
 * cache (used unless `force`), and imitates the messenger's protection
 * against number scanning: more distinct numbers than `checkAccountLimit`
 * allows within its window pause all checks of the instance for
 * `retryAfterSeconds`. Cache, window and pause live in checks.json (lowdb).
 */
import path from 'node:path';
import type { Low } from 'lowdb';
import type { LocalInstanceConfig } from '../config.js';
import type { CheckAccountResponse, ParsedRequest, RateLimitBody } from '../../api/types.js';
import { personalChatId } from '../../api/chat-id.js';
import type { Clock } from '../../util/clock.js';
import type { Network } from '../network.js';
import { openJsonDoc } from '../persist/json-doc.js';

interface CachedResult {
  exist: boolean;
  chatId: string;
  username?: string;
  phoneNumber?: number;
  checkedAt: number;
}

interface ChecksDoc {
  cache: Record<string, CachedResult>;
  /** Distinct targets looked up on the "server" since `startedAt`. */
  window: { startedAt: number; targets: string[] } | null;
  pausedUntil: number | null;
}

export type CheckAccountAnswer = CheckAccountResponse | RateLimitBody;

export class AccountChecker {
  private constructor(
    private readonly db: Low<ChecksDoc>,
    private readonly limit: LocalInstanceConfig['checkAccountLimit'],
    private readonly network: Network,
    private readonly clock: Clock,
  ) {}

  static async open(dir: string, limit: LocalInstanceConfig['checkAccountLimit'], network: Network, clock: Clock) {
    const db = await openJsonDoc<ChecksDoc>(path.join(dir, 'checks.json'), { cache: {}, window: null, pausedUntil: null });
    return new AccountChecker(db, limit, network, clock);
  }

  async check(req: ParsedRequest<'checkAccount'>): Promise<CheckAccountAnswer> {
    const now = this.clock.now();
    const data = this.db.data;
    if (data.pausedUntil !== null) {
      if (now < data.pausedUntil) return rateLimited(Math.ceil((data.pausedUntil - now) / 1000));
      data.pausedUntil = null;
      data.window = null;
    }
    const key = req.phoneNumber !== undefined ? `phone:${req.phoneNumber}` : `user:${req.username!.toLowerCase()}`;
    const cached = data.cache[key];
    if (cached && !req.force) return present(cached, true);

    // A lookup on the messenger's server: it counts against the window.
    const windowMs = this.limit.windowMinutes * 60_000;
    if (!data.window || now - data.window.startedAt >= windowMs) data.window = { startedAt: now, targets: [] };
    if (!data.window.targets.includes(key)) {
      if (data.window.targets.length >= this.limit.numbers) {
        data.pausedUntil = now + this.limit.retryAfterSeconds * 1000;
        await this.db.write();
        return rateLimited(this.limit.retryAfterSeconds);
      }
      data.window.targets.push(key);
    }
    const result = this.lookup(req, now);
    data.cache[key] = result;
    await this.db.write();
    return present(result, false);
  }

  private lookup(req: ParsedRequest<'checkAccount'>, now: number): CachedResult {
    const account =
      req.phoneNumber !== undefined
        ? this.network.accountByPhone(req.phoneNumber)
        : this.network.accountByUsername(req.username!);
    if (!account || account.hidden) return { exist: false, chatId: '', checkedAt: now };
    return {
      exist: true,
      chatId: personalChatId(account.phone),
      username: account.username ?? '',
      phoneNumber: account.phone,
      checkedAt: now,
    };
  }
}

function present(r: CachedResult, fromCache: boolean): CheckAccountResponse {
  // No account or a hidden number: these two fields and nothing else.
  if (!r.exist) return { exist: false, chatId: '' };
  return { exist: true, chatId: r.chatId, username: r.username, phoneNumber: r.phoneNumber, fromCache };
}

function rateLimited(retryAfter: number): RateLimitBody {
  return { status: false, data: { status: 'fail', reason: 'rate_limit_exceeded', retryAfter } };
}
