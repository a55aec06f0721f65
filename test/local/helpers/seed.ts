/** Seed files used by the tests: every typeMessage, incoming and outgoing, and a long chat. */
import { ALICE, BOB, T0 } from '../../support/local-service.js';

export const LONG_CHAT = '79003334455@c.us';
export const GROUP = '120363000000000001@g.us';
export const OLD_OUTGOING_ID = 'OLDOUTGOING00000000000000000000A';

const sec = (ms: number) => Math.floor(ms / 1000);

/** One message of each kind, both directions, in BOB's chat. */
export function everyKind(): Record<string, unknown>[] {
  const file = (typeMessage: string, fileName: string, mimeType: string) => ({
    typeMessage,
    fileName,
    mimeType,
    downloadUrl: `https://files.example.invalid/${fileName}`,
    caption: `${typeMessage} caption`,
    jpegThumbnail: typeMessage === 'imageMessage' ? 'AAAA' : '',
  });
  const kinds: Record<string, unknown>[] = [
    { typeMessage: 'textMessage', textMessage: 'hello' },
    file('imageMessage', 'photo.jpg', 'image/jpeg'),
    { ...file('videoMessage', 'clip.mp4', 'video/mp4'), videoNote: true },
    file('documentMessage', 'report.pdf', 'application/pdf'),
    file('audioMessage', 'voice.ogg', 'audio/ogg'),
    { ...file('stickerMessage', 'sticker.webp', 'image/webp'), isAnimated: true },
    { typeMessage: 'pollMessage', pollMessageData: { name: 'Lunch?', options: ['yes', 'no'] } },
    { typeMessage: 'locationMessage', location: { latitude: 55.75, longitude: 37.61 } },
    { typeMessage: 'reactionMessage', reaction: '👍', quotedMessage: { stanzaId: 'SEEDTEXTINCOMING0001', participant: BOB } },
    {
      typeMessage: 'contactMessage',
      contact: { displayName: 'Dave', vcard: 'BEGIN:VCARD\nEND:VCARD', chatId: '79004445566@c.us', phoneNumber: 79004445566 },
    },
  ];
  const out: Record<string, unknown>[] = [];
  kinds.forEach((k, i) => {
    out.push({ ...k, type: 'incoming', timestamp: sec(T0) - 3600 + i * 2, ...(i === 0 ? { idMessage: 'SEEDTEXTINCOMING0001' } : {}) });
    out.push({ ...k, type: 'outgoing', timestamp: sec(T0) - 3600 + i * 2 + 1, statusMessage: 'read', sendByApi: false });
  });
  return out;
}

/** Seed: every kind in BOB's chat, 120 texts in LONG_CHAT, a 2-day-old outgoing message in ALICE's chat, a group chat. */
export function conformanceSeed(): string {
  const long = Array.from({ length: 120 }, (_, i) => ({
    type: i % 2 ? 'outgoing' : 'incoming',
    typeMessage: 'textMessage',
    textMessage: `message ${i}`,
    timestamp: sec(T0) - 7200 + i,
  }));
  return JSON.stringify({
    chats: [
      { chatId: BOB, messages: everyKind() },
      { chatId: LONG_CHAT, messages: long },
      {
        chatId: ALICE,
        messages: [
          {
            type: 'outgoing',
            idMessage: OLD_OUTGOING_ID,
            typeMessage: 'textMessage',
            textMessage: 'two days ago',
            timestamp: new Date(T0 - 2 * 86_400_000).toISOString(),
            sendByApi: true,
          },
        ],
      },
      {
        chatId: GROUP,
        messages: [{ typeMessage: 'textMessage', textMessage: 'hi all', senderId: '79001112233@c.us', timestamp: sec(T0) - 60 }],
      },
    ],
  });
}
