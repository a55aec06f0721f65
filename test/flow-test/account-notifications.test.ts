/**
 * Flows triggered by the notifications about the account itself: a contact
 * blocking it (incomingBlock), the Developer plan's chat quota refusing a
 * send (quotaExceeded), and the handset's data (deviceInfo). In a flow test
 * the case's event happens on the in-process local service (a block through
 * its `block` endpoint, the others queued as given), and the run is started by
 * the notification consumer a daemon uses, which turns on each type's switch.
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
  const dir = project({ 'config.yaml': LOCAL_CONFIG, ...files }, 'msgflow-account-notif-');
  dirs.push(dir);
  const r = await cli(['test'], dir);
  return { ...r, out: r.stdout + r.stderr };
}

const BLOCK_FLOW = `name: blocked
on:
  notification: { type: incomingBlock }
steps:
  - id: said
    uses: log
    with: { message: "\${{ event.chatId }} \${{ event.chatState }}" }
`;

const QUOTA_FLOW = `name: quota
on:
  notification: { type: quotaExceeded }
steps:
  - id: said
    uses: log
    with: { message: "\${{ event.quotaData.status }} \${{ event.quotaData.used }}/\${{ event.quotaData.total }}" }
`;

const DEVICE_FLOW = `name: battery
on:
  notification: { type: deviceInfo }
steps:
  - id: said
    uses: log
    with: { message: "\${{ event.deviceData.deviceModel }} at \${{ event.deviceData.battery }}%" }
`;

describe('a flow triggered by incomingBlock', () => {
  it('starts when a contact blocks the account, with the chat and its state', async () => {
    const r = await flowTest({
      'flows/blocked.yaml': BLOCK_FLOW,
      'flows/blocked.test.yaml': `cases:
  - name: a contact blocks the account
    flow: blocked
    event: { typeWebhook: incomingBlock, chatId: 79001112233@c.us, chatState: blocked }
    expect:
      run: { trigger: notification }
      steps:
        said: { output: { message: 79001112233@c.us blocked } }
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('a case expecting another chat than the one that blocked fails, naming the case', async () => {
    const r = await flowTest({
      'flows/blocked.yaml': BLOCK_FLOW,
      'flows/blocked.test.yaml': `cases:
  - name: a contact blocks the account
    flow: blocked
    event: { typeWebhook: incomingBlock, chatId: 79001112233@c.us, chatState: blocked }
    expect:
      steps:
        said: { output: { message: 79009998877@c.us blocked } }
`,
    });
    expect(r.out).toMatch(/0 passed, 1 failed/);
    expect(r.out).toContain('a contact blocks the account');
  }, 60_000);
});

describe('a flow triggered by quotaExceeded', () => {
  it('starts with the quota data the service documents', async () => {
    const r = await flowTest({
      'flows/quota.yaml': QUOTA_FLOW,
      'flows/quota.test.yaml': `cases:
  - name: the chat quota is used up
    flow: quota
    event:
      typeWebhook: quotaExceeded
      quotaData:
        method: correspondents
        used: 3
        total: 3
        status: CORRESPONDENTS_QUOTA_EXCEEDED
        description: "Monthly quota has been exceeded. You can only send or receive messages from following chats: 79001112233@c.us"
    expect:
      run: { trigger: notification }
      steps:
        said: { output: { message: CORRESPONDENTS_QUOTA_EXCEEDED 3/3 } }
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);
});

describe('a flow triggered by deviceInfo', () => {
  it('starts with the handset data the service documents', async () => {
    const r = await flowTest({
      'flows/battery.yaml': DEVICE_FLOW,
      'flows/battery.test.yaml': `cases:
  - name: the handset reports its battery
    flow: battery
    event:
      typeWebhook: deviceInfo
      deviceData: { platform: iphone, deviceManufacturer: Apple, deviceModel: iPhone 11, osVersion: 13.4.1, waVersion: 2.20.42, battery: 15 }
    expect:
      run: { trigger: notification }
      steps:
        said: { output: { message: iPhone 11 at 15% } }
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);
});
