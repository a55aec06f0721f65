import type { MsgflowError } from '../../../src/api/errors.js';
import type { ApiMethod } from '../../../src/api/methods.js';

/** Distinctive secrets: any occurrence in an error or a log line is a leak. */
export const TOKEN = 'tok3nZZsecretQQ9f8e7d6c5b4a';
export const ID = '7107993311';

export const PERSONAL = '79001112233@c.us';
export const GROUP = '120363043968066561@g.us';

export const message = (over: Record<string, unknown> = {}) => ({
  type: 'outgoing',
  idMessage: 'BAE5F4886F6F2D05',
  timestamp: 1767225600,
  typeMessage: 'textMessage',
  chatId: PERSONAL,
  statusMessage: 'delivered',
  sendByApi: true,
  textMessage: 'hello',
  ...over,
});

/** A valid request and a success answer for every method. */
export const VALID: Record<ApiMethod, { request: Record<string, unknown>; answer: unknown }> = {
  addContact: { request: { chatId: PERSONAL, firstName: 'Ann' }, answer: { addContact: true } },
  editContact: {
    request: { chatId: PERSONAL, firstName: 'Ann', lastName: 'Lee', saveInAddressbook: false },
    answer: { editContact: true },
  },
  deleteContact: { request: { chatId: PERSONAL }, answer: { deleteContact: true } },
  getChatHistory: { request: { chatId: GROUP, count: 2 }, answer: [message(), message({ idMessage: 'BAE5F4886F6F2D06' })] },
  getMessage: { request: { chatId: PERSONAL, idMessage: 'BAE5F4886F6F2D05' }, answer: message() },
  sendFileByUrl: {
    request: { chatId: PERSONAL, urlFile: 'https://files.example.com/report.pdf', fileName: 'report.pdf' },
    answer: { idMessage: 'BAE5F4886F6F2D07' },
  },
  lastOutgoingMessages: { request: { minutes: 60 }, answer: [message()] },
  checkAccount: {
    request: { phoneNumber: 79001112233 },
    answer: { exist: true, chatId: PERSONAL, phoneNumber: 79001112233, fromCache: false },
  },
  getStateInstance: { request: {}, answer: { stateInstance: 'authorized' } },
  sendMessage: { request: { chatId: PERSONAL, message: 'hello' }, answer: { idMessage: 'BAE5F4886F6F2D08' } },
  checkWhatsapp: { request: { phoneNumber: 79001112233 }, answer: { existsWhatsapp: true, chatId: PERSONAL } },
  getSettings: { request: {}, answer: { wid: '79000000000@c.us', webhookUrl: '', incomingWebhook: 'yes' } },
  setSettings: { request: { incomingWebhook: 'yes' }, answer: { saveSettings: true } },
  showMessagesQueue: { request: {}, answer: [] },
  clearMessagesQueue: { request: {}, answer: { isCleared: true } },
  lastIncomingMessages: { request: { minutes: 60 }, answer: [message({ type: 'incoming', statusMessage: undefined })] },
  receiveNotification: {
    request: { receiveTimeout: 5 },
    answer: {
      receiptId: 1,
      body: {
        typeWebhook: 'stateInstanceChanged',
        instanceData: { idInstance: Number(ID), wid: '79000000000@c.us', typeInstance: 'whatsapp' },
        timestamp: 1767225600,
        stateInstance: 'authorized',
      },
    },
  },
  deleteNotification: { request: { receiptId: 1 }, answer: { result: true } },
  // Sending
  sendFileByUpload: {
    request: { chatId: PERSONAL, file: Buffer.from('%PDF-1.4 report'), fileName: 'report.pdf', caption: 'the report' },
    answer: { idMessage: 'BAE5F4886F6F2D09', urlFile: 'https://media.example.com/files/abc/report.pdf' },
  },
  uploadFile: {
    request: { file: Buffer.from('%PDF-1.4 report'), fileName: 'report.pdf', mimeType: 'application/pdf' },
    answer: { urlFile: 'https://media.example.com/files/abc/report.pdf' },
  },
  sendLocation: {
    request: { chatId: PERSONAL, latitude: 55.75, longitude: 37.61, nameLocation: 'Red Square' },
    answer: { idMessage: 'BAE5F4886F6F2D0A' },
  },
  sendContact: {
    request: { chatId: PERSONAL, contact: { phoneContact: 79002223344, firstName: 'Bob' } },
    answer: { idMessage: 'BAE5F4886F6F2D0B' },
  },
  sendPoll: {
    request: { chatId: GROUP, message: 'Lunch?', options: [{ optionName: 'yes' }, { optionName: 'no' }] },
    answer: { idMessage: 'BAE5F4886F6F2D0C' },
  },
  sendInteractiveButtons: {
    request: {
      chatId: PERSONAL,
      body: 'Our site',
      buttons: [{ type: 'url', buttonId: '1', buttonText: 'Open', url: 'https://example.com/' }],
    },
    answer: { idMessage: 'BAE5F4886F6F2D0D' },
  },
  sendInteractiveButtonsReply: {
    request: { chatId: PERSONAL, body: 'Coming?', buttons: [{ buttonId: 'y', buttonText: 'Yes' }] },
    answer: { idMessage: 'BAE5F4886F6F2D0E' },
  },
  forwardMessages: {
    request: { chatId: GROUP, chatIdFrom: PERSONAL, messages: ['BAE5F4886F6F2D05'] },
    answer: { messages: ['BAE5F4886F6F2D0F'] },
  },
  sendTyping: { request: { chatId: PERSONAL, typingTime: 3000 }, answer: undefined },
  // Groups
  createGroup: {
    request: { groupName: 'Team', chatIds: [PERSONAL] },
    answer: { created: true, chatId: GROUP, groupInviteLink: 'https://chat.whatsapp.com/AbCdEfGhIjKlMnOpQrStUv' },
  },
  getGroupData: {
    request: { groupId: GROUP },
    answer: {
      groupId: GROUP,
      owner: PERSONAL,
      subject: 'Team',
      creation: 1767225600,
      participants: [{ id: PERSONAL, isAdmin: true, isSuperAdmin: true }],
      subjectTime: 1767225600,
      subjectOwner: PERSONAL,
      groupInviteLink: '',
    },
  },
  updateGroupName: { request: { groupId: GROUP, groupName: 'Team 2' }, answer: { updateGroupName: true } },
  updateGroupSettings: {
    request: { groupId: GROUP, allowParticipantsSendMessages: false },
    answer: { updateGroupSettings: true },
  },
  addGroupParticipant: { request: { groupId: GROUP, participantChatId: PERSONAL }, answer: { addParticipant: true } },
  removeGroupParticipant: { request: { groupId: GROUP, participantChatId: PERSONAL }, answer: { removeParticipant: true } },
  setGroupAdmin: { request: { groupId: GROUP, participantChatId: PERSONAL }, answer: { setGroupAdmin: true } },
  removeAdmin: { request: { groupId: GROUP, participantChatId: PERSONAL }, answer: { removeAdmin: true } },
  setGroupPicture: {
    request: { groupId: GROUP, file: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]), fileName: 'team.jpg' },
    answer: { setGroupPicture: true, urlAvatar: 'https://example.com/files/a/avatar.jpg', reason: '' },
  },
  leaveGroup: { request: { groupId: GROUP }, answer: { leaveGroup: true } },
  // Messages and chats
  getContacts: { request: { group: false, count: 10 }, answer: [{ id: PERSONAL, name: 'Ann', contactName: '', type: 'user' }] },
  getContactInfo: {
    request: { chatId: PERSONAL },
    answer: { chatId: PERSONAL, name: 'Ann', contactName: '', avatar: '', isArchive: false },
  },
  getAvatar: { request: { chatId: GROUP }, answer: { urlAvatar: '', available: true } },
  getChats: {
    request: { count: 5 },
    answer: [{ archive: false, id: GROUP, ephemeralExpiration: 0, ephemeralSettingTimestamp: 0, name: 'Team', type: 'group' }],
  },
  downloadFile: { request: { chatId: PERSONAL, idMessage: 'BAE5F4886F6F2D05' }, answer: { downloadUrl: 'https://files.example/a.png' } },
  deleteMessage: { request: { chatId: PERSONAL, idMessage: 'BAE5F4886F6F2D05', onlySenderDelete: true }, answer: undefined },
  editMessage: {
    request: { chatId: PERSONAL, idMessage: 'BAE5F4886F6F2D05', message: 'fixed' },
    answer: { idMessage: 'BAE5F4886F6F2D07' },
  },
  readChat: { request: { chatId: PERSONAL }, answer: { setRead: true } },
  archiveChat: { request: { chatId: GROUP }, answer: undefined },
  unarchiveChat: { request: { chatId: GROUP }, answer: undefined },
  setDisappearingChat: {
    request: { chatId: PERSONAL, ephemeralExpiration: 86400 },
    answer: { chatId: PERSONAL, disappearingMessagesInChat: true, ephemeralExpiration: 86400 },
  },
  // Account, queues and calls
  getStatusInstance: { request: {}, answer: { statusInstance: 'online' } },
  getStateInstanceHistory: {
    request: { count: 2 },
    answer: [{ stateInstance: 'authorized', timestamp: 1767225600, phoneNumber: '79001234567@c.us' }],
  },
  reboot: { request: {}, answer: { isReboot: true } },
  logout: { request: {}, answer: { isLogout: true } },
  qr: { request: {}, answer: { type: 'alreadyLogged', message: 'instance account already authorized' } },
  getAuthorizationCode: { request: { phoneNumber: 79001234567 }, answer: { status: true, code: 'GAPI2015' } },
  getWaSettings: {
    request: {},
    answer: { avatar: '', phone: '79001234567', stateInstance: 'authorized', deviceId: '79001234567:8@s.whatsapp.net' },
  },
  getMessagesCount: { request: {}, answer: { count: 0 } },
  getWebhooksCount: { request: {}, answer: { count: 3 } },
  clearWebhooksQueue: { request: {}, answer: { isCleared: true, reason: '' } },
  lastIncomingCalls: {
    request: { minutes: 60 },
    answer: [{ type: 'incoming', idMessage: 'CALL1', timestamp: 1767225600, from: PERSONAL, status: 'missed', isVideo: false }],
  },
  lastOutgoingCalls: { request: {}, answer: [] },
  setProfilePicture: {
    request: { file: Buffer.from('JFIF picture'), fileName: 'me.jpg' },
    answer: { reason: null, urlAvatar: 'https://media.example.com/files/abc/me.jpg', setProfilePicture: true },
  },
  // Statuses
  sendTextStatus: {
    request: { message: 'I use GREEN-API', backgroundColor: '#228B22', font: 'SERIF', participants: [PERSONAL] },
    answer: { idMessage: 'BAE5F4886F6F2D0B' },
  },
  sendVoiceStatus: {
    request: { urlFile: 'https://example.com/voice.mp3', fileName: 'voice.mp3' },
    answer: { idMessage: 'BAE5F4886F6F2D0C' },
  },
  sendMediaStatus: {
    request: { urlFile: 'https://example.com/pic.jpg', fileName: 'pic.jpg', caption: 'hi' },
    answer: { idMessage: 'BAE5F4886F6F2D0D' },
  },
  deleteStatus: { request: { idMessage: 'BAE5F4886F6F2D0D' }, answer: undefined },
  getStatusStatistic: {
    request: { idMessage: 'BAE5F4886F6F2D0D' },
    answer: [{ participant: PERSONAL, timestamp: 1767225600, status: 'read' }],
  },
  getIncomingStatuses: { request: { minutes: 60 }, answer: [] },
  getOutgoingStatuses: { request: {}, answer: [message({ typeMessage: 'extendedTextMessage', statusMessage: 'read' })] },
};

/** The error a call rejects with; a call that resolves fails the test. */
export const fail = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e as MsgflowError,
  );
