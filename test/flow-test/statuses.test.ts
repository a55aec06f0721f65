/**
 * A flow posts a status and reads how far it got, under `msgflow test`: the
 * status actions take the methods' requests as `with:` and answer what the
 * local service answers.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function flowTest(files: Record<string, string>) {
  const dir = project({ 'config.yaml': LOCAL_CONFIG, ...files }, 'msgflow-statuses-');
  dirs.push(dir);
  const r = await cli(['test'], dir);
  return { ...r, out: r.stdout + r.stderr };
}

const ALICE = '79001112233@c.us';
const NOBODY = '79009990000@c.us';

const STORY = `name: story
steps:
  - id: post
    uses: sendTextStatus
    with: { message: "Open until 8 today", backgroundColor: "#228B22", participants: [${ALICE}, ${NOBODY}] }
  - id: stats
    uses: getStatusStatistic
    with: { idMessage: "\${{ steps.post.output.idMessage }}" }
  - id: seen
    uses: log
    with: { message: "\${{ steps.stats.output[0].participant }} \${{ steps.stats.output[0].status }}, \${{ steps.stats.output[1].participant }} \${{ steps.stats.output[1].status }}" }
  - id: journal
    uses: getOutgoingStatuses
    with: { minutes: 60 }
  - id: listed
    uses: log
    with: { message: "\${{ steps.journal.output[0].textMessage }} \${{ steps.journal.output[0].statusMessage }}" }
`;

describe('flows and statuses', () => {
  it('a flow posts a status; its statistic shows who it reached and the journal lists it', async () => {
    const r = await flowTest({
      'flows/story.yaml': STORY,
      'flows/story.test.yaml': `cases:
  - name: a status to Alice and a number without an account
    flow: story
    expect:
      status: succeeded
      steps:
        seen: { output: { message: "${ALICE} delivered, ${NOBODY} sent" } }
        listed: { output: { message: "Open until 8 today delivered" } }
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('a status step with a field the method does not take fails at load, naming it', async () => {
    const r = await flowTest({
      'flows/bad.yaml': `name: bad
steps:
  - id: post
    uses: sendTextStatus
    with: { message: "hi", colour: "#000000" }
`,
      'flows/bad.test.yaml': `cases:
  - name: never runs
    flow: bad
`,
    });
    expect(r.out).toMatch(/flows\/bad\.yaml:\d+:\d+.*colour/);
    expect(r.code).not.toBe(0);
  }, 60_000);
});
