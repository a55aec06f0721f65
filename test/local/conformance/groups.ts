import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NotificationBody, ReceivedNotification } from '../../../src/api/notifications.js';
import type { GetGroupDataResponse, Message } from '../../../src/api/types.js';
import type { ManualClock } from '../../../src/util/clock.js';
import {
  ALICE,
  BOB,
  CAROL,
  conformanceConfig,
  NOBODY,
  startLocal,
  type LocalUnderTest,
  type TransportKind,
} from '../../support/local-service.js';
import { makeJpeg, makePng } from '../../support/media.js';

const ALL_ON = { incomingWebhook: 'yes', outgoingWebhook: 'yes', outgoingAPIMessageWebhook: 'yes', outgoingMessageWebhook: 'yes' };

/** The group methods, membership and notInGroup, over one transport. */
export function groupsSuite(kind: TransportKind) {
  describe('groups', () => {
    let h: LocalUnderTest<ManualClock>;
    beforeEach(async () => {
      h = await startLocal({
        kind,
        config: conformanceConfig((raw) => {
          (raw.instances as Record<string, unknown>[])[0]!.settings = ALL_ON;
        }),
      });
    });
    afterEach(() => h.close());

    async function ok<T>(method: Parameters<typeof h.call>[0], body: unknown, opts?: Parameters<typeof h.call>[2]): Promise<T> {
      const r = await h.call(method, body, opts);
      expect(r.statusCode, JSON.stringify(r.body)).toBe(200);
      return r.body as T;
    }
    async function refused(method: Parameters<typeof h.call>[0], body: unknown): Promise<string> {
      const r = await h.call(method, body);
      expect(r.statusCode).toBe(400);
      return (r.body as { message: string }).message;
    }
    async function create(chatIds = [ALICE, BOB]): Promise<string> {
      const r = await ok<{ created: boolean; chatId: string; groupInviteLink: string }>('createGroup', { groupName: 'Team', chatIds });
      expect(r.created).toBe(true);
      return r.chatId;
    }
    const data = (groupId: string) => ok<GetGroupDataResponse>('getGroupData', { groupId });
    const wid = async () => (await ok<{ wid: string }>('getSettings', undefined)).wid;

    it('createGroup: the account owns a new group of the participants who have an account, with an invite link', async () => {
      const r = await ok<{ created: boolean; chatId: string; groupInviteLink: string }>('createGroup', {
        groupName: 'Team',
        chatIds: [ALICE, BOB, NOBODY],
      });
      expect(r.created).toBe(true);
      expect(r.chatId).toMatch(/^120363\d{12}@g\.us$/);
      expect(r.groupInviteLink).toMatch(/^https:\/\/chat\.whatsapp\.com\/[\w-]{22}$/);
      const me = await wid();
      const g = await data(r.chatId);
      expect(g).toMatchObject({
        groupId: r.chatId,
        owner: me,
        subject: 'Team',
        creation: Math.floor(h.clock.now() / 1000),
        subjectOwner: me,
        groupInviteLink: r.groupInviteLink,
        allowParticipantsEditGroupSettings: true,
        allowParticipantsSendMessages: true,
      });
      expect(g.participants).toEqual([
        { id: me, isAdmin: true, isSuperAdmin: true },
        { id: ALICE, isAdmin: false, isSuperAdmin: false },
        { id: BOB, isAdmin: false, isSuperAdmin: false },
      ]);
      // Nobody to add: no group.
      expect(await ok('createGroup', { groupName: 'Alone', chatIds: [NOBODY] })).toEqual({
        created: false,
        chatId: '',
        groupInviteLink: '',
      });
    });

    it('group requests are checked, the field named', async () => {
      expect(await refused('createGroup', { groupName: 'x'.repeat(101), chatIds: [ALICE] })).toBe(
        "Validation failed. Details: 'groupName' length must be less than or equal to 100 characters long",
      );
      expect(await refused('createGroup', { groupName: 'Team' })).toBe("Validation failed. Details: 'chatIds' is required");
      expect(await refused('getGroupData', { groupId: ALICE })).toBe(
        "Validation failed. Details: 'groupId' must be a group chat ID (ending in @g.us)",
      );
      expect(await refused('setGroupAdmin', { groupId: '120363000000000001@g.us' })).toBe(
        "Validation failed. Details: 'participantChatId' is required",
      );
      expect(await refused('getGroupData', { groupId: '120363000000000001@g.us' })).toBe(
        "Validation failed. Details: 'groupId' 120363000000000001@g.us is not a group this account is in",
      );
    });

    it('participants and admins change as the owner says; what cannot be done answers false; all of it survives a restart', async () => {
      const groupId = await create();
      expect(await ok('setGroupAdmin', { groupId, participantChatId: ALICE })).toEqual({ setGroupAdmin: true });
      expect(await ok('setGroupAdmin', { groupId, participantChatId: ALICE })).toEqual({ setGroupAdmin: false });
      expect(await ok('setGroupAdmin', { groupId, participantChatId: CAROL })).toEqual({ setGroupAdmin: false });
      expect(await ok('addGroupParticipant', { groupId, participantChatId: CAROL })).toEqual({ addParticipant: true });
      expect(await ok('addGroupParticipant', { groupId, participantChatId: CAROL })).toEqual({ addParticipant: false });
      expect(await ok('addGroupParticipant', { groupId, participantChatId: NOBODY })).toEqual({ addParticipant: false });
      expect(await ok('removeGroupParticipant', { groupId, participantChatId: BOB })).toEqual({ removeParticipant: true });
      expect(await ok('removeGroupParticipant', { groupId, participantChatId: BOB })).toEqual({ removeParticipant: false });
      // The owner stays.
      expect(await ok('removeGroupParticipant', { groupId, participantChatId: await wid() })).toEqual({ removeParticipant: false });
      expect(await ok('setGroupAdmin', { groupId, participantChatId: CAROL })).toEqual({ setGroupAdmin: true });
      expect(await ok('removeAdmin', { groupId, participantChatId: CAROL })).toEqual({ removeAdmin: true });
      expect(await ok('removeAdmin', { groupId, participantChatId: CAROL })).toEqual({ removeAdmin: false });
      h.clock.advance(60_000);
      expect(await ok('updateGroupName', { groupId, groupName: 'Team B' })).toEqual({ updateGroupName: true });
      expect(await ok('updateGroupSettings', { groupId, allowParticipantsSendMessages: false })).toEqual({ updateGroupSettings: true });
      const before = await data(groupId);
      expect(before).toMatchObject({
        subject: 'Team B',
        subjectTime: Math.floor(h.clock.now() / 1000),
        allowParticipantsEditGroupSettings: true,
        allowParticipantsSendMessages: false,
      });
      expect(before.participants.map((p) => [p.id, p.isAdmin])).toEqual([
        [await wid(), true],
        [ALICE, true],
        [CAROL, false],
      ]);
      await h.restart();
      expect(await data(groupId)).toEqual(before);
    });

    it('setGroupPicture: a JPEG becomes the group picture at urlAvatar; an empty file or another format is refused', async () => {
      const groupId = await create();
      const jpeg = makeJpeg(8, 8);
      const pic = (data: Buffer, fileName = 'team.jpg') =>
        h.call('setGroupPicture', undefined, { upload: { kind: 'multipart', fields: { groupId }, file: { data, fileName } } });
      const r = await pic(jpeg);
      expect(r.statusCode).toBe(200);
      const body = r.body as { setGroupPicture: boolean; urlAvatar: string; reason: string };
      expect(body).toMatchObject({ setGroupPicture: true, reason: '' });
      const got = await h.download(body.urlAvatar);
      expect(got.status).toBe(200);
      expect(got.body.equals(jpeg)).toBe(true);
      expect((await pic(Buffer.alloc(0))).body).toEqual({ message: 'Validation failed. Details: File is empty' });
      expect((await pic(makePng(4, 4), 'team.png')).body).toEqual({ message: 'Validation failed. Details: Unsupported media type' });
    });

    it('leaveGroup: the owner leaves as an admin; the group is no longer its to change; what it sends there after is notInGroup', async () => {
      const groupId = await create();
      const { idMessage: before } = await ok<{ idMessage: string }>('sendMessage', { chatId: groupId, message: 'hi all' });
      expect(await h.settled(before)).toBe('sent');
      // In the same millisecond: the order decides, not the time.
      expect(await ok('leaveGroup', { groupId })).toEqual({ removeAdmin: true });
      expect(await ok('leaveGroup', { groupId })).toEqual({ leaveGroup: false });
      expect(await ok('updateGroupName', { groupId, groupName: 'Mine' })).toEqual({ updateGroupName: false });
      expect(await ok('addGroupParticipant', { groupId, participantChatId: CAROL })).toEqual({ addParticipant: false });
      expect(await ok('updateGroupSettings', { groupId, allowParticipantsSendMessages: true })).toMatchObject({
        updateGroupSettings: false,
      });
      expect(await refused('getGroupData', { groupId })).toContain('is not a group this account is in');

      const { idMessage: after } = await ok<{ idMessage: string }>('sendMessage', { chatId: groupId, message: 'anyone?' });
      h.clock.advance(1000);
      expect(await h.settled(after)).toBe('sent');
      const history = await ok<Message[]>('getChatHistory', { chatId: groupId, count: 10 });
      expect(history.map((m) => [m.idMessage, m.statusMessage])).toEqual([
        [after, 'notInGroup'],
        [before, 'delivered'],
      ]);
      expect(await nextStatus(after)).toMatchObject({ status: 'notInGroup', chatId: groupId });
      await h.restart();
      expect((await ok<Message>('getMessage', { chatId: groupId, idMessage: after })).statusMessage).toBe('notInGroup');
    });

    it('a send to a group the account never was in is notInGroup; a group it has messages from is one it is in', async () => {
      const stranger = '120363000000000001@g.us';
      const { idMessage: lost } = await ok<{ idMessage: string }>('sendMessage', { chatId: stranger, message: 'hello?' });
      expect(await h.settled(lost)).toBe('sent');
      // A group known only from what arrived from it (made on the phone) is one the account is in.
      const known = '120363000000000002@g.us';
      await h.admin('incoming', { chatId: known, senderId: ALICE, typeMessage: 'textMessage', textMessage: 'hi' });
      const { idMessage: answer } = await ok<{ idMessage: string }>('sendMessage', { chatId: known, message: 'hi Alice' });
      h.clock.advance(60_000);
      expect(await h.settled(answer)).toBe('sent');
      h.clock.advance(3_600_000);
      expect((await ok<Message>('getMessage', { chatId: stranger, idMessage: lost })).statusMessage).toBe('notInGroup');
      expect(await nextStatus(lost)).toMatchObject({ status: 'notInGroup', chatId: stranger });
      expect((await ok<Message>('getMessage', { chatId: known, idMessage: answer })).statusMessage).not.toBe('notInGroup');
      // The group is not known for having been written to: a second send is notInGroup as well.
      const { idMessage: again } = await ok<{ idMessage: string }>('sendMessage', { chatId: stranger, message: 'still?' });
      h.clock.advance(60_000);
      expect(await h.settled(again)).toBe('sent');
      expect((await ok<Message>('getMessage', { chatId: stranger, idMessage: again })).statusMessage).toBe('notInGroup');
    });

    /** The outgoingMessageStatus of `idMessage` (the notifications before it are read and deleted). */
    async function nextStatus(idMessage: string): Promise<NotificationBody> {
      for (;;) {
        const n = await ok<ReceivedNotification>('receiveNotification', undefined, { query: { receiveTimeout: '5' } });
        await h.call('deleteNotification', undefined, { pathParams: [String(n.receiptId)] });
        const b = n.body;
        if (b.typeWebhook === 'outgoingMessageStatus' && 'idMessage' in b && b.idMessage === idMessage) return b;
      }
    }
  });
}
