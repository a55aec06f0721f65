/**
 * Flows and group chats: the group actions run as steps (a picture from a file
 * of the project), and a message sent to the group after the account left it
 * is in its chat, notInGroup.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { makeJpeg } from '../support/media.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const ALICE = '79001112233@c.us';

const TEAM = `name: team
steps:
  - id: team
    uses: createGroup
    with: { groupName: Team, chatIds: [${ALICE}] }
  - id: picture
    uses: setGroupPicture
    with: { groupId: "\${{ steps.team.output.chatId }}", file: files/team.jpg }
  - id: data
    uses: getGroupData
    with: { groupId: "\${{ steps.team.output.chatId }}" }
  - id: leave
    uses: leaveGroup
    with: { groupId: "\${{ steps.team.output.chatId }}" }
  - id: late
    uses: sendMessage
    with: { chatId: "\${{ steps.team.output.chatId }}", message: "Still there?" }
`;

describe('flows and groups', () => {
  it('a flow creates a group, sets its picture from a project file and leaves it; what it writes there after is notInGroup', async () => {
    const dir = project(
      {
        'config.yaml': LOCAL_CONFIG,
        'flows/team.yaml': TEAM,
        'flows/team.test.yaml': `cases:
  - name: a group's life
    flow: team
    timeout: 1h
    expect:
      status: succeeded
      steps:
        team: { output: { created: true, chatId: { $match: "@g\\\\.us$" } } }
        picture: { output: { setGroupPicture: true, urlAvatar: { $match: "/avatar\\\\.jpg$" } } }
        data: { output: { subject: Team, participants: [{ isSuperAdmin: true }, { id: ${ALICE}, isAdmin: false }] } }
        leave: { output: { removeAdmin: true } }
      local:
        outgoing:
          - { chatId: { $match: "@g\\\\.us$" }, textMessage: "Still there?", statusMessage: notInGroup }
`,
      },
      'msgflow-groups-',
    );
    dirs.push(dir);
    mkdirSync(path.join(dir, 'files'));
    writeFileSync(path.join(dir, 'files/team.jpg'), makeJpeg(8, 8));
    const r = await cli(['test'], dir);
    const out = r.stdout + r.stderr;
    expect(out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);
});
