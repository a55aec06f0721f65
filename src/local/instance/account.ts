/**
 * The account side of an instance (getStateInstanceHistory, reboot, logout,
 * qr, getAuthorizationCode, getWaSettings, setProfilePicture) and its call
 * journals (lastIncomingCalls, lastOutgoingCalls), kept in account.jsonl:
 * one append-only log of state changes, calls and profile pictures. What is
 * kept in memory is capped at what the methods can answer (the service
 * returns the last 10000 calls), and the file is compacted to it at load,
 * so neither grows with the instance's age.
 */
import { createHash, randomInt } from 'node:crypto';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { PNG as PngImage } from 'pngjs';
import { MsgflowError } from '../../api/errors.js';
import type { InstanceState } from '../../api/notifications.js';
import type {
  CallRecord,
  CallStatus,
  GetAuthorizationCodeResponse,
  GetWaSettingsResponse,
  ParsedRequest,
  QrResponse,
  SetProfilePictureResponse,
  StateHistoryRecord,
} from '../../api/types.js';
import type { Clock } from '../../util/clock.js';
import { newMessageId } from '../ids.js';
import type { MediaStore } from '../media/types.js';
import { AppendLog } from '../persist/append-log.js';
import { fileUrl } from './sending.js';

/** Calls kept per direction: the service's journals return the last 10000. */
export const CALLS_KEPT = 10_000;
/** State changes kept: getStateInstanceHistory's count defaults to 100; ten times that is plenty. */
export const STATES_KEPT = 1000;
/** How long a reboot keeps the instance `starting` (the service takes up to 5 minutes; locally a moment). */
export const REBOOT_MS = 1000;
/** clearWebhooksQueue runs at most once a minute, as on the service. */
export const CLEAR_WEBHOOKS_EVERY_MS = 60_000;
/** A profile picture is the account's until replaced: kept far beyond an upload's 15 days. */
const PICTURE_RETENTION_MS = 100 * 365 * 24 * 3600_000;
/** The QR code changes every 20 seconds on the service. */
const QR_PERIOD_MS = 20_000;

type AccountRecord =
  { op: 'state'; state: InstanceState; at: number } | { op: 'call'; call: CallRecord } | { op: 'picture'; urlAvatar: string; at: number };

export interface AccountDeps {
  dir: string;
  /** `dir` as named in errors. */
  shown: string;
  clock: Clock;
  media: MediaStore;
  /** The account's own chat id, e.g. `79001234567@c.us`. */
  wid: string;
  publicUrl: () => string;
}

/** A call as the admin endpoint gives it. */
export interface CallInput {
  /** The other party's chat id. */
  from: string;
  /** @default 'incoming' */
  type?: 'incoming' | 'outgoing';
  /** @default 'offer' */
  status?: CallStatus;
  /** @default false */
  isVideo?: boolean;
  /** The call's id; a status after `offer` names the call it ends. @default a new id */
  idMessage?: string;
}

export class Account {
  private readonly log: AppendLog<AccountRecord>;
  private readonly states: { state: InstanceState; at: number }[] = [];
  private readonly calls: { incoming: CallRecord[]; outgoing: CallRecord[] } = { incoming: [], outgoing: [] };
  private urlAvatar = '';
  private lastCleared = Number.NEGATIVE_INFINITY;

  private constructor(private readonly deps: AccountDeps) {
    this.log = new AppendLog<AccountRecord>(path.join(deps.dir, 'account.jsonl'), path.join(deps.shown, 'account.jsonl'));
  }

  /**
   * Opens account.jsonl; a new instance's history starts with `initial`, its state now.
   * @throws MsgflowError LOCAL_DATA_INVALID naming the file and line of a corrupt record
   */
  static async open(deps: AccountDeps, initial: InstanceState): Promise<Account> {
    const a = new Account(deps);
    const records = (await a.log.read()) ?? [];
    for (const r of records) a.apply(r);
    const kept = a.snapshot();
    if (records.length > 2 * kept.length + 100) await a.log.write(kept);
    if (a.states.length === 0) await a.recordState(initial);
    return a;
  }

  /** A state change, appended to the history. */
  async recordState(state: InstanceState): Promise<void> {
    await this.append({ op: 'state', state, at: this.deps.clock.now() });
  }

  /** getStateInstanceHistory: the last `count` changes, newest first. */
  stateHistory(count: number): StateHistoryRecord[] {
    return this.states
      .slice(-count)
      .reverse()
      .map((s) => ({ stateInstance: s.state, timestamp: Math.floor(s.at / 1000), phoneNumber: this.deps.wid }));
  }

  /** A call made or received (admin): into its journal; answers the record. */
  async addCall(input: CallInput): Promise<CallRecord> {
    const call: CallRecord = {
      type: input.type ?? 'incoming',
      idMessage: input.idMessage ?? newMessageId(),
      timestamp: Math.floor(this.deps.clock.now() / 1000),
      from: input.from,
      status: input.status ?? 'offer',
      isVideo: input.isVideo ?? false,
    };
    await this.append({ op: 'call', call });
    return call;
  }

  /** lastIncomingCalls / lastOutgoingCalls: the calls since `sinceMs`, newest first (a call's latest status). */
  journal(type: 'incoming' | 'outgoing', sinceMs: number): CallRecord[] {
    const since = Math.floor(sinceMs / 1000);
    const seen = new Set<string>();
    const out: CallRecord[] = [];
    for (const c of [...this.calls[type]].reverse()) {
      if (c.timestamp < since) break;
      if (seen.has(c.idMessage)) continue;
      seen.add(c.idMessage);
      out.push(c);
    }
    return out;
  }

  /** qr: a code to scan while not authorized; `alreadyLogged` once authorized. */
  qr(state: InstanceState): QrResponse {
    if (state === 'notAuthorized')
      return { type: 'qrCode', message: qrImage(`${this.deps.wid}:${Math.floor(this.deps.clock.now() / QR_PERIOD_MS)}`) };
    if (state === 'starting') return { type: 'error', message: 'instance in starting process try later' };
    if (state === 'blocked') return { type: 'error', message: 'Instance has auth. You need to make log out' };
    return { type: 'alreadyLogged', message: 'instance account already authorized' };
  }

  /** getAuthorizationCode: an 8-character code while not authorized; none once authorized. */
  authorizationCode(state: InstanceState): GetAuthorizationCodeResponse {
    if (state !== 'notAuthorized') return { status: false, code: '' };
    const alphabet = 'ABCDEFGHJKLMNPQRSTVWXYZ0123456789';
    let code = '';
    for (let n = 0; n < 8; n++) code += alphabet[randomInt(alphabet.length)];
    return { status: true, code };
  }

  /** getWaSettings: the account, its fields empty while it is not authorized, blocked or starting. */
  waSettings(state: InstanceState): GetWaSettingsResponse {
    if (state === 'notAuthorized' || state === 'blocked' || state === 'starting') {
      return { avatar: '', phone: '', stateInstance: state, deviceId: '' };
    }
    const phone = this.deps.wid.replace(/@c\.us$/, '');
    return { avatar: this.urlAvatar, phone, stateInstance: state, deviceId: `${phone}:1@s.whatsapp.net` };
  }

  /** setProfilePicture: the picture stored and served back; getWaSettings' avatar from now on. */
  async setPicture(r: ParsedRequest<'setProfilePicture'>): Promise<SetProfilePictureResponse> {
    if (r.file.byteLength === 0) throw new MsgflowError('VALIDATION_FAILED', { details: 'File is empty' });
    const f = await this.deps.media.storeUpload({
      data: r.file,
      fileName: r.fileName ?? 'avatar.jpg',
      retentionMs: PICTURE_RETENTION_MS,
    });
    if (f.typeMessage !== 'imageMessage') {
      throw new MsgflowError('VALIDATION_FAILED', { details: `Unsupported media type: ${f.mimeType}` });
    }
    const urlAvatar = fileUrl(this.deps.publicUrl(), f);
    await this.append({ op: 'picture', urlAvatar, at: this.deps.clock.now() });
    return { reason: null, urlAvatar, setProfilePicture: true };
  }

  /**
   * clearWebhooksQueue: `clear` runs at most once a minute; within the
   * minute the answer says how many seconds are left.
   */
  async clearWebhooks(clear: () => Promise<unknown>): Promise<{ isCleared: boolean; reason: string; leftTime?: number }> {
    const now = this.deps.clock.now();
    const left = this.lastCleared + CLEAR_WEBHOOKS_EVERY_MS - now;
    if (left > 0) return { isCleared: false, reason: 'Too many requests', leftTime: Math.ceil(left / 1000) };
    this.lastCleared = now;
    await clear();
    return { isCleared: true, reason: '' };
  }

  private async append(r: AccountRecord): Promise<void> {
    await this.log.append(r);
    this.apply(r);
  }

  private apply(r: AccountRecord): void {
    if (r.op === 'state') {
      this.states.push({ state: r.state, at: r.at });
      if (this.states.length > STATES_KEPT) this.states.splice(0, this.states.length - STATES_KEPT);
    } else if (r.op === 'call') {
      const list = this.calls[r.call.type];
      list.push(r.call);
      if (list.length > CALLS_KEPT) list.splice(0, list.length - CALLS_KEPT);
    } else {
      this.urlAvatar = r.urlAvatar;
    }
  }

  /** What is kept, as records (compaction). */
  private snapshot(): AccountRecord[] {
    const out: AccountRecord[] = this.states.map((s) => ({ op: 'state' as const, state: s.state, at: s.at }));
    for (const call of [...this.calls.incoming, ...this.calls.outgoing]) out.push({ op: 'call', call });
    if (this.urlAvatar !== '') out.push({ op: 'picture', urlAvatar: this.urlAvatar, at: 0 });
    return out;
  }
}

/**
 * A base64 PNG standing for a QR code: 25×25 modules (finder squares in
 * three corners, the rest drawn from `seed`), 8 px each. Not a scannable
 * code: no phone can link to the local service (it is authorized through the
 * admin `state` endpoint), but a client shows it as it would the real one.
 */
function qrImage(seed: string): string {
  const modules = 25;
  const scale = 8;
  const size = modules * scale;
  const bits = createHash('sha256').update(seed).digest();
  const dark = (x: number, y: number): boolean => {
    const finder = (fx: number, fy: number) => {
      const dx = x - fx;
      const dy = y - fy;
      if (dx < 0 || dy < 0 || dx > 6 || dy > 6) return undefined;
      return dx === 0 || dy === 0 || dx === 6 || dy === 6 || (dx >= 2 && dx <= 4 && dy >= 2 && dy <= 4);
    };
    const f = finder(0, 0) ?? finder(modules - 7, 0) ?? finder(0, modules - 7);
    if (f !== undefined) return f;
    const i = (y * modules + x) % (bits.length * 8);
    return ((bits[i >> 3]! >> (i & 7)) & 1) === 1;
  };
  // pngjs on the first QR code asked for, not when the service starts (pngjs is CommonJS: a synchronous require).
  const { PNG } = createRequire(import.meta.url)('pngjs') as { PNG: typeof PngImage };
  const png = new PNG({ width: size, height: size });
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const v = dark(Math.floor(x / scale), Math.floor(y / scale)) ? 0 : 255;
      const o = (y * size + x) * 4;
      png.data[o] = v;
      png.data[o + 1] = v;
      png.data[o + 2] = v;
      png.data[o + 3] = 255;
    }
  }
  return PNG.sync.write(png).toString('base64');
}

/** getStatusInstance: the socket is open while the account works (a yellowCard account still has it). */
export function socketStatus(state: InstanceState): 'online' | 'offline' {
  return state === 'authorized' || state === 'yellowCard' ? 'online' : 'offline';
}

/**
 * Runs `fn` when the account is authorized, else answers as the service does
 * for a method that needs the account (400 `instance account not
 * authorized`, or `instance in starting process try later`).
 */
export function withAccount<T>(host: { state(): InstanceState }, fn: () => T): T {
  const state = host.state();
  if (state === 'starting') throw new MsgflowError('INSTANCE_STARTING');
  if (state !== 'authorized' && state !== 'yellowCard') throw new MsgflowError('ACCOUNT_NOT_AUTHORIZED');
  return fn();
}
