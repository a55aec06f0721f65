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
};
