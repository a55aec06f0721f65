/**
 * The account methods of @green-api/whatsapp-api-client-js-v2 (reboot,
 * logout, getStateInstance, getQR, getSettings, setSettings, getWaSettings,
 * setProfilePicture, getAuthorizationCode), driven through that package
 * against `msgflow serve` as its users would (only its axios base URL
 * changed): each answers with its documented shape.
 */
import { GreenApiClient } from '@green-api/whatsapp-api-client-js-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveForOfficialClient, type OfficialClient } from '../support/green-api.js';
import { makePng } from '../support/media.js';
import { networkYaml } from '../support/network.js';
import { waitFor } from '../support/wait.js';

let client: GreenApiClient;
let h: OfficialClient;

beforeAll(async () => {
  h = await serveForOfficialClient({
    name: 'account',
    local: [networkYaml('  ', { deliveredAfterMs: 100 })],
    instance: [
      // The test asks more often than the published 1 request/second.
      '      rateLimits: { getStateInstance: 0, getWaSettings: 0, qr: 0, logout: 0, reboot: 0, getAuthorizationCode: 0, setProfilePicture: 0 }',
    ],
  });
  client = h.client;
});

afterAll(async () => {
  await h?.close();
});

describe('@green-api/whatsapp-api-client-js-v2 account methods against msgflow serve', () => {
  it('an authorized account: getQR says alreadyLogged, getAuthorizationCode gives no code, getWaSettings the account', async () => {
    expect(await client.getStateInstance()).toEqual({ stateInstance: 'authorized' });
    expect(await client.getQR()).toEqual({ type: 'alreadyLogged', message: 'instance account already authorized' });
    expect(await client.getAuthorizationCode(79001234567)).toEqual({ status: false, code: '' });
    const wa = await client.getWaSettings();
    expect(wa).toMatchObject({ avatar: '', stateInstance: 'authorized' });
    expect(wa.phone).toMatch(/^\d+$/);
    expect(wa.deviceId).toBe(`${wa.phone}:1@s.whatsapp.net`);
  });

  it('setProfilePicture: the picture is served at urlAvatar and becomes getWaSettings avatar', async () => {
    const picture = makePng(32, 32);
    const set = await client.setProfilePicture(new File([new Uint8Array(picture)], 'me.png', { type: 'image/png' }));
    expect(set).toMatchObject({ reason: null, setProfilePicture: true });
    const res = await fetch(set.urlAvatar);
    expect(Buffer.from(await res.arrayBuffer()).equals(picture)).toBe(true);
    expect((await client.getWaSettings()).avatar).toBe(set.urlAvatar);
  });

  it('logout, then getQR gives a PNG code and getAuthorizationCode a code; reboot answers isReboot and the state comes back', async () => {
    expect(await client.logout()).toEqual({ isLogout: true });
    expect(await client.getStateInstance()).toEqual({ stateInstance: 'notAuthorized' });
    const qr = await client.getQR();
    expect(qr.type).toBe('qrCode');
    expect(Buffer.from(qr.message, 'base64').subarray(1, 4).toString()).toBe('PNG');
    const code = await client.getAuthorizationCode(79001234567);
    expect(code.status).toBe(true);
    expect(code.code).toMatch(/^[A-Z0-9]{8}$/);
    expect(await client.getWaSettings()).toEqual({ avatar: '', phone: '', stateInstance: 'notAuthorized', deviceId: '' });
    expect(await client.reboot()).toEqual({ isReboot: true });
    await waitFor('the reboot to end', async () =>
      (await client.getStateInstance()).stateInstance === 'notAuthorized' ? true : undefined,
    );
  });

  it('setSettings answers saveSettings and getSettings the saved switch', async () => {
    expect(await client.setSettings({ stateWebhook: 'yes' })).toEqual({ saveSettings: true });
    expect(await client.getSettings()).toMatchObject({ stateWebhook: 'yes' });
  });
});
