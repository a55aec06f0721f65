/**
 * The group chats of one instance: the ones it created (createGroup), their
 * names, settings, participants and admins, its own membership, and the
 * picture set with setGroupPicture.
 *
 * They live in one keyed log, groups.jsonl (see persist/keyed-log.ts), one
 * line per change holding the whole group, keyed by its id:
 *
 *     {"k":"120363012345678901@g.us","g":{"s":"Team","o":"79001112233@c.us",...}}
 *
 * A group is small (WhatsApp caps it at 1024 participants), so a change
 * writes that group once: the cost of a write does not grow with the number
 * of groups, and a restart replays the file.
 *
 * What the service answers where the account may not act (not an admin, not
 * a member, a participant without an account) is its documented 200 with the
 * method's flag false; nothing changes.
 */
import { randomBytes, randomInt } from 'node:crypto';
import path from 'node:path';
import { MsgflowError } from '../../api/errors.js';
import type { GetGroupDataResponse, GroupParticipant, ParsedRequest } from '../../api/types.js';
import type { Clock } from '../../util/clock.js';
import type { MediaStore } from '../media/types.js';
import type { Network } from '../network.js';
import { corruptAt } from '../persist/append-log.js';
import { KeyedLog, keyedLine, type Key, type KeyedState } from '../persist/keyed-log.js';
import { KeyedMutex } from '../persist/keyed-mutex.js';
import { fileUrl } from './sending.js';

/** A participant on disk: its chat id and a role (0 member, 1 admin, 2 owner). */
type StoredParticipant = [id: string, role: 0 | 1 | 2];

/** One group on disk (short names: one line per change). */
interface StoredGroup {
  /** subject */
  s: string;
  /** owner */
  o: string;
  /** creation, Unix seconds */
  c: number;
  /** subjectTime, Unix seconds */
  st: number;
  /** subjectOwner */
  so: string;
  /** The invite code (the link's last segment). */
  i: string;
  p: StoredParticipant[];
  /** allowParticipantsEditGroupSettings */
  es: boolean;
  /** allowParticipantsSendMessages */
  sm: boolean;
  /** The picture's link. */
  a?: string;
  /** When the account left the group (ms): what it sends from then on is notInGroup. */
  l?: number;
}

/** How long a group picture is kept by the media store: as long as a group lives, for a test service. */
const PICTURE_RETENTION_MS = 365 * 24 * 3600_000;

class GroupsState implements KeyedState {
  readonly groups = new Map<string, StoredGroup>();

  get liveLines(): number {
    return this.groups.size;
  }

  apply(key: Key, field: string, raw: string | number, where: string): void {
    if (typeof key !== 'string') throw corruptAt(where, `key ${JSON.stringify(key)} is not a group id`);
    if (field !== 'g' || typeof raw !== 'string') throw corruptAt(where, `unknown field '${field}' (expected g, an object)`);
    this.groups.set(key, JSON.parse(raw) as StoredGroup);
  }

  *snapshot(): Iterable<string> {
    for (const [k, g] of this.groups) yield keyedLine(k, 'g', JSON.stringify(g));
  }
}

export interface GroupsDeps {
  network: Network;
  clock: Clock;
  media: MediaStore;
  /** Base URL of the picture links; read when a picture is set. */
  publicUrl: () => string;
  /** The account's own chat id. */
  wid: string;
}

export class Groups {
  /** One change at a time per group: two participants added at once both stay. */
  private readonly mutex = new KeyedMutex<string>();

  private constructor(
    private readonly log: KeyedLog,
    private readonly state: GroupsState,
    private readonly deps: GroupsDeps,
  ) {}

  /**
   * Opens dir/groups.jsonl (no file: no groups yet).
   * @throws MsgflowError LOCAL_DATA_INVALID naming the file (as shown) and line
   */
  static async open(dir: string, shownDir: string, deps: GroupsDeps): Promise<Groups> {
    const state = new GroupsState();
    const log = new KeyedLog(path.join(dir, 'groups.jsonl'), path.join(shownDir, 'groups.jsonl'), state);
    await log.load();
    return new Groups(log, state, deps);
  }

  /**
   * Whether a message sent to `chatId` now goes to a group the account has
   * left (asked as the message is stored, which fixes its status). A group
   * it never created is judged by the caller (knows).
   */
  notInGroup(chatId: string): boolean {
    return this.state.groups.get(chatId)?.l !== undefined;
  }

  /** Whether this group was created here (createGroup), left or not. */
  knows(chatId: string): boolean {
    return this.state.groups.has(chatId);
  }

  async create(r: ParsedRequest<'createGroup'>) {
    const { wid, network, clock } = this.deps;
    // As on the phone: numbers without an account are not added; the account is the owner.
    const others = [...new Set(r.chatIds)].filter((id) => id !== wid && network.hasAccount(id));
    if (others.length === 0) return { created: false, chatId: '', groupInviteLink: '' };
    const now = Math.floor(clock.now() / 1000);
    const chatId = newGroupId();
    const g: StoredGroup = {
      s: r.groupName,
      o: wid,
      c: now,
      st: now,
      so: wid,
      i: randomBytes(16).toString('base64url').slice(0, 22),
      p: [[wid, 2], ...others.map((id): StoredParticipant => [id, 0])],
      es: true,
      sm: true,
    };
    await this.save(chatId, g);
    return { created: true, chatId, groupInviteLink: inviteLink(g) };
  }

  /** @throws MsgflowError VALIDATION_FAILED for a group the account does not know or has left */
  data(groupId: string): GetGroupDataResponse {
    const g = this.state.groups.get(groupId);
    if (!g || g.l !== undefined) {
      throw new MsgflowError('VALIDATION_FAILED', { details: `'groupId' ${groupId} is not a group this account is in` });
    }
    const participants = g.p.map(([id, role]): GroupParticipant => ({ id, isAdmin: role > 0, isSuperAdmin: role === 2 }));
    return {
      groupId,
      owner: g.o,
      subject: g.s,
      creation: g.c,
      participants,
      subjectTime: g.st,
      subjectOwner: g.so,
      // As documented: empty unless the account is an admin or the owner.
      groupInviteLink: this.role(g) > 0 ? inviteLink(g) : '',
      allowParticipantsEditGroupSettings: g.es,
      allowParticipantsSendMessages: g.sm,
      size: participants.length,
    };
  }

  rename(r: ParsedRequest<'updateGroupName'>) {
    return this.change(r.groupId, (g) => {
      if (!this.mayEdit(g)) return false;
      g.s = r.groupName;
      g.st = Math.floor(this.deps.clock.now() / 1000);
      g.so = this.deps.wid;
      return true;
    }).then((ok) => ({ updateGroupName: ok }));
  }

  async updateSettings(r: ParsedRequest<'updateGroupSettings'>) {
    const ok = await this.change(r.groupId, (g) => {
      if (this.role(g) === 0) return false;
      if (r.allowParticipantsEditGroupSettings !== undefined) g.es = r.allowParticipantsEditGroupSettings;
      if (r.allowParticipantsSendMessages !== undefined) g.sm = r.allowParticipantsSendMessages;
      return true;
    });
    return ok ? { updateGroupSettings: true } : { updateGroupSettings: false, reason: 'the account is not an admin of this group' };
  }

  async addParticipant(r: ParsedRequest<'addGroupParticipant'>) {
    const ok = await this.change(r.groupId, (g) => {
      if (this.role(g) === 0 || find(g, r.participantChatId) || !this.deps.network.hasAccount(r.participantChatId)) return false;
      g.p.push([r.participantChatId, 0]);
      return true;
    });
    return { addParticipant: ok };
  }

  async removeParticipant(r: ParsedRequest<'removeGroupParticipant'>) {
    const ok = await this.change(r.groupId, (g) => {
      const p = find(g, r.participantChatId);
      // The owner cannot be removed; the account leaves with leaveGroup.
      if (this.role(g) === 0 || !p || p[1] === 2 || p[0] === this.deps.wid) return false;
      g.p = g.p.filter((x) => x !== p);
      return true;
    });
    return { removeParticipant: ok };
  }

  async setAdmin(r: ParsedRequest<'setGroupAdmin'>) {
    const ok = await this.change(r.groupId, (g) => {
      const p = find(g, r.participantChatId);
      if (this.role(g) === 0 || !p || p[1] > 0) return false;
      p[1] = 1;
      return true;
    });
    return { setGroupAdmin: ok };
  }

  async removeAdmin(r: ParsedRequest<'removeAdmin'>) {
    const ok = await this.change(r.groupId, (g) => {
      const p = find(g, r.participantChatId);
      if (this.role(g) === 0 || !p || p[1] !== 1) return false;
      p[1] = 0;
      return true;
    });
    return { removeAdmin: ok };
  }

  async setPicture(r: ParsedRequest<'setGroupPicture'>) {
    const g = this.state.groups.get(r.groupId);
    if (!g || !this.mayEdit(g)) {
      return { setGroupPicture: false, urlAvatar: '', reason: 'the account may not change this group' };
    }
    const f = await this.deps.media.storeUpload({ data: r.file, fileName: 'avatar.jpg', retentionMs: PICTURE_RETENTION_MS });
    const urlAvatar = fileUrl(this.deps.publicUrl(), f);
    await this.change(r.groupId, (x) => {
      x.a = urlAvatar;
      return true;
    });
    return { setGroupPicture: true, urlAvatar, reason: '' };
  }

  /** The account leaves: `{removeAdmin: true}` when it was an admin (as documented), else `{leaveGroup}`. */
  async leave(r: ParsedRequest<'leaveGroup'>): Promise<{ leaveGroup: boolean } | { removeAdmin: true }> {
    let wasAdmin = false;
    const ok = await this.change(r.groupId, (g) => {
      const me = find(g, this.deps.wid);
      if (!me) return false;
      wasAdmin = me[1] > 0;
      g.p = g.p.filter((x) => x !== me);
      g.l = this.deps.clock.now();
      return true;
    });
    return ok && wasAdmin ? { removeAdmin: true } : { leaveGroup: ok };
  }

  /** The account's role in `g`: 0 when a member (or not one), 1 admin, 2 owner. */
  private role(g: StoredGroup): number {
    return find(g, this.deps.wid)?.[1] ?? 0;
  }

  /** Whether the account may change the name and picture: an admin, or a member while members may. */
  private mayEdit(g: StoredGroup): boolean {
    const me = find(g, this.deps.wid);
    return me !== undefined && (me[1] > 0 || g.es);
  }

  /**
   * Applies `edit` to a copy of the group and, when it says it changed
   * something, writes the copy before the index changes (nothing answered is
   * lost across a crash). An unknown group changes nothing.
   */
  private change(groupId: string, edit: (g: StoredGroup) => boolean): Promise<boolean> {
    return this.mutex.run(groupId, async () => {
      const current = this.state.groups.get(groupId);
      if (!current) return false;
      const copy = structuredClone(current);
      if (!edit(copy)) return false;
      await this.save(groupId, copy);
      return true;
    });
  }

  private async save(groupId: string, g: StoredGroup): Promise<void> {
    await this.log.write([[groupId, 'g', JSON.stringify(g)]]);
  }
}

function find(g: StoredGroup, id: string): StoredParticipant | undefined {
  return g.p.find((p) => p[0] === id);
}

function inviteLink(g: StoredGroup): string {
  return `https://chat.whatsapp.com/${g.i}`;
}

/** A group id in the current style: 120363 and twelve digits, @g.us. */
function newGroupId(): string {
  const tail = Array.from({ length: 12 }, () => randomInt(10)).join('');
  return `120363${tail}@g.us`;
}
