/**
 * A notification is parsed once, where it enters (the poll loop, the webhook
 * receiver, Run now): its fields typed from then on, read leniently because
 * a body comes from the network, and the body kept whole as received.
 */
import { describe, expect, it } from 'vitest';
import { chatIdOf, eventOf, notificationKey, parseNotification, textOf } from '../../src/engine/notify/body.js';

const incoming = {
  typeWebhook: 'incomingMessageReceived',
  instanceData: { idInstance: 1101000001, wid: '79990000000@c.us', typeInstance: 'whatsapp' },
  timestamp: 1767600000,
  idMessage: 'BAE5F4886F2B4F7A',
  senderData: { chatId: '79001112233@c.us', chatName: 'Alice', sender: '79001112233@c.us', senderName: 'Alice', senderContactName: '' },
  messageData: { typeMessage: 'extendedTextMessage', extendedTextMessageData: { text: 'see https://example.org', title: 'x' } },
};

describe('a received notification', () => {
  it('of a type msgflow reads has its fields typed, and is kept whole as received', () => {
    const n = parseNotification(incoming)!;
    expect(n).toMatchObject({
      typeWebhook: 'incomingMessageReceived',
      idMessage: 'BAE5F4886F2B4F7A',
      timestampMs: 1767600000_000,
      idInstance: '1101000001',
    });
    expect(n.body?.typeWebhook).toBe('incomingMessageReceived');
    expect(chatIdOf(n)).toBe('79001112233@c.us');
    expect(textOf(n)).toBe('see https://example.org');
    expect(n.raw).toBe(incoming);
    // What a flow sees: the body as received, without the instance id, with the config name.
    expect(eventOf(n, 'default')).toEqual({
      ...incoming,
      instanceData: { wid: '79990000000@c.us', typeInstance: 'whatsapp' },
      instance: 'default',
    });
  });

  it('reads a field of another type as absent, never as an error', () => {
    const n = parseNotification({
      typeWebhook: 'outgoingMessageStatus',
      chatId: 79001112233,
      idMessage: 'ABC',
      status: { not: 'text' },
      timestamp: 'yesterday',
      senderData: 'x',
    })!;
    expect(chatIdOf(n)).toBeUndefined();
    expect(n.body?.typeWebhook === 'outgoingMessageStatus' && n.body.status).toBeUndefined();
    expect(n.timestampMs).toBeUndefined();
    expect(notificationKey(n)).toBe('outgoingMessageStatus:ABC');
    expect(notificationKey(parseNotification({ typeWebhook: 'outgoingMessageStatus', idMessage: 'ABC', status: 'read' })!)).toBe(
      'outgoingMessageStatus:ABC:read',
    );
  });

  it('of another type is kept, typed only by what every notification carries', () => {
    const call = { typeWebhook: 'outgoingCall', idMessage: 'CALL1', from: '79001112233@c.us', status: 'pickUp', timestamp: 1767600001 };
    const n = parseNotification(call)!;
    expect(n.body).toBeUndefined();
    expect(n).toMatchObject({ typeWebhook: 'outgoingCall', idMessage: 'CALL1', timestampMs: 1767600001_000 });
    expect(chatIdOf(n)).toBeUndefined();
    expect(n.raw).toBe(call);
    // Without a message id, the whole body identifies it: the same body gives the same key.
    const noId = { typeWebhook: 'statusInstanceChanged', statusInstance: 'online' };
    expect(notificationKey(parseNotification(noId)!)).toBe(notificationKey(parseNotification({ ...noId })!));
    expect(notificationKey(parseNotification(noId)!)).toMatch(/^statusInstanceChanged:[0-9a-f]{24}$/);
  });

  it('incomingCall is read: its chat is the caller, and a call offer and its end are two notifications', () => {
    const offer = parseNotification({
      typeWebhook: 'incomingCall',
      idMessage: 'CALL1',
      from: '79001112233@c.us',
      status: 'offer',
      timestamp: 1,
    })!;
    const ended = parseNotification({
      typeWebhook: 'incomingCall',
      idMessage: 'CALL1',
      from: '79001112233@c.us',
      status: 'missed',
      timestamp: 2,
    })!;
    expect(offer.body).toMatchObject({ typeWebhook: 'incomingCall', from: '79001112233@c.us', status: 'offer' });
    expect(chatIdOf(offer)).toBe('79001112233@c.us');
    expect(notificationKey(offer)).toBe('incomingCall:CALL1:offer');
    expect(notificationKey(ended)).toBe('incomingCall:CALL1:missed');
  });

  it('incomingBlock, quotaExceeded and deviceInfo are read with their documented fields; only a block has a chat', () => {
    const block = parseNotification({ typeWebhook: 'incomingBlock', timestamp: 1, chatId: '10000000000@c.us', chatState: 'blocked' })!;
    expect(block.body).toMatchObject({ typeWebhook: 'incomingBlock', chatId: '10000000000@c.us', chatState: 'blocked' });
    expect(chatIdOf(block)).toBe('10000000000@c.us');
    const quotaData = {
      method: 'correspondents',
      used: 3,
      total: 3,
      status: 'CORRESPONDENTS_QUOTA_EXCEEDED',
      description: 'Monthly quota…',
    };
    const quota = parseNotification({ typeWebhook: 'quotaExceeded', timestamp: 2, quotaData })!;
    expect(quota.body).toMatchObject({ typeWebhook: 'quotaExceeded', quotaData });
    expect(chatIdOf(quota)).toBeUndefined();
    const device = parseNotification({ typeWebhook: 'deviceInfo', timestamp: 3, deviceData: { platform: 'iphone', battery: '90%' } })!;
    // Lenient: a battery level that is not a number is absent, the rest is read.
    expect(device.body?.typeWebhook === 'deviceInfo' && device.body.deviceData).toEqual({ platform: 'iphone' });
    expect(chatIdOf(device)).toBeUndefined();
  });

  it('is not one without a typeWebhook', () => {
    for (const v of [null, 'text', [], {}, { typeWebhook: '' }, { typeWebhook: 7 }]) expect(parseNotification(v)).toBeUndefined();
  });
});
