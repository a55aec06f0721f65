/**
 * A flow triggered by a call to the account (on.notification type
 * incomingCall): in a flow test the case's event rings on the in-process
 * local service, so the call is in lastIncomingCalls as live, and the run is
 * started by the notification consumer a daemon uses.
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
  const dir = project({ 'config.yaml': LOCAL_CONFIG, ...files }, 'msgflow-call-');
  dirs.push(dir);
  const r = await cli(['test'], dir);
  return { ...r, out: r.stdout + r.stderr };
}

const FLOW = `name: missed-call
on:
  notification: { type: incomingCall }
steps:
  - id: calls
    uses: lastIncomingCalls
    with: { minutes: 10 }
  - id: said
    uses: log
    with: { message: "\${{ event.from }} \${{ event.status }} \${{ steps.calls.output[0].idMessage == event.idMessage }}" }
  - id: sorry
    uses: sendMessage
    with: { chatId: "\${{ event.from }}", message: "We cannot take calls here; please write." }
`;

describe('a flow triggered by incomingCall', () => {
  it('starts on a call, which lastIncomingCalls lists, and can write back to the caller', async () => {
    const r = await flowTest({
      'flows/missed-call.yaml': FLOW,
      'flows/missed-call.test.yaml': `cases:
  - name: a caller is asked to write
    flow: missed-call
    event: { typeWebhook: incomingCall, from: 79001112233@c.us, status: offer, idMessage: CALL000000000001 }
    expect:
      run: { trigger: notification }
      steps:
        calls: { output: [{ type: incoming, from: 79001112233@c.us, status: offer, idMessage: CALL000000000001, isVideo: false }] }
        said: { output: { message: 79001112233@c.us offer true } }
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('a case expecting another status than the call had fails, naming the case', async () => {
    const r = await flowTest({
      'flows/missed-call.yaml': FLOW,
      'flows/missed-call.test.yaml': `cases:
  - name: a caller is asked to write
    flow: missed-call
    event: { typeWebhook: incomingCall, from: 79001112233@c.us, status: offer, idMessage: CALL000000000001 }
    expect:
      steps:
        said: { output: { message: 79001112233@c.us missed true } }
`,
    });
    expect(r.out).toMatch(/0 passed, 1 failed/);
    expect(r.out).toContain('a caller is asked to write');
  }, 60_000);
});
