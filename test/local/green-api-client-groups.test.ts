/**
 * The group methods of @green-api/whatsapp-api-client-js-v2, driven through
 * that package against `msgflow serve` as its users would (only its axios
 * base URL changed): each answers with its documented shape, and the group
 * they build is the one getGroupData describes. (updateGroupSettings is not
 * in that package; the conformance suite covers it.)
 */
import { GreenApiClient } from '@green-api/whatsapp-api-client-js-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveForOfficialClient, type OfficialClient } from '../support/green-api.js';
import { ALICE, BOB, CAROL } from '../support/local-service.js';
import { makeJpeg } from '../support/media.js';
import { networkYaml } from '../support/network.js';

let client: GreenApiClient;
let h: OfficialClient;

beforeAll(async () => {
  const unlimited = ['createGroup', 'getGroupData', 'updateGroupName', 'addGroupParticipant', 'removeGroupParticipant']
    .concat(['setGroupAdmin', 'removeAdmin', 'setGroupPicture', 'leaveGroup'])
    .map((m) => `${m}: 0`)
    .join(', ');
  h = await serveForOfficialClient({
    name: 'groups',
    local: [networkYaml('  ', { deliveredAfterMs: 100 })],
    instance: [
      // The test calls faster than a person changes a group (1 request/second).
      `      rateLimits: { ${unlimited} }`,
    ],
  });
  client = h.client;
});

afterAll(async () => {
  await h?.close();
});

describe('@green-api/whatsapp-api-client-js-v2 group methods against msgflow serve', () => {
  it('a group created, renamed, its participants and admins changed, a picture set, then left', async () => {
    const created = await client.createGroup({ groupName: 'Green API group', chatIds: [ALICE, BOB] });
    expect(created).toEqual({
      created: true,
      chatId: expect.stringMatching(/@g\.us$/),
      groupInviteLink: expect.stringMatching(/^https:\/\/chat\.whatsapp\.com\//),
    });
    const groupId = created.chatId;
    expect(await client.updateGroupName({ groupId, groupName: 'Renamed' })).toEqual({ updateGroupName: true });
    expect(await client.addGroupParticipant({ groupId, participantChatId: CAROL })).toEqual({ addParticipant: true });
    expect(await client.removeGroupParticipant({ groupId, participantChatId: BOB })).toEqual({ removeParticipant: true });
    expect(await client.setGroupAdmin({ groupId, participantChatId: ALICE })).toEqual({ setGroupAdmin: true });
    expect(await client.removeAdmin({ groupId, participantChatId: ALICE })).toEqual({ removeAdmin: true });
    const picture = await client.setGroupPicture({ groupId, file: new Blob([new Uint8Array(makeJpeg(8, 8))], { type: 'image/jpeg' }) });
    expect(picture).toEqual({ setGroupPicture: true, urlAvatar: expect.stringMatching(/^http:\/\/.+\.jpg$/), reason: '' });

    const data = await client.getGroupData({ groupId });
    expect(data).toMatchObject({
      groupId,
      owner: expect.stringMatching(/@c\.us$/),
      subject: 'Renamed',
      creation: expect.any(Number),
      subjectTime: expect.any(Number),
      subjectOwner: data.owner,
      groupInviteLink: created.groupInviteLink,
    });
    expect(data.participants).toEqual([
      { id: data.owner, isAdmin: true, isSuperAdmin: true },
      { id: ALICE, isAdmin: false, isSuperAdmin: false },
      { id: CAROL, isAdmin: false, isSuperAdmin: false },
    ]);

    expect(await client.leaveGroup({ groupId })).toEqual({ removeAdmin: true });
    expect(await client.leaveGroup({ groupId })).toEqual({ leaveGroup: false });
  });
});
