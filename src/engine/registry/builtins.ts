/**
 * Built-in actions: one per API method, named after it, taking the method's
 * strict request schema as `with:` (so a typo such as `chatID` is caught when
 * the flow is loaded), and `log`.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { API_METHODS, METHOD_SPECS, type ApiMethod } from '../../api/methods.js';
import { REQUEST_SHAPES, STRICT_REQUEST_SCHEMAS } from '../../api/schemas.js';
import { checkAccountTargetRule } from '../../api/validate.js';
import { defineAction, inputFile, type ActionDefinition } from '../action.js';
import type { ActionRegistry } from './registry.js';

const DESCRIPTIONS: Record<ApiMethod, { description: string; output: string }> = {
  addContact: {
    description: "Adds a contact to the messenger's contact list (and, by default, to the phone's address book).",
    output: '{ addContact: boolean }',
  },
  editContact: { description: 'Edits a contact.', output: '{ editContact: boolean }' },
  deleteContact: { description: 'Deletes a contact.', output: '{ deleteContact: boolean }' },
  getChatHistory: { description: 'Messages of one chat, newest first.', output: 'an array of Message objects' },
  getMessage: { description: 'One message by id.', output: 'a Message object' },
  sendFileByUrl: {
    description: 'Queues a file, fetched from a link, for sending to a chat. Not idempotent: a retry may send twice.',
    output: '{ idMessage: string }',
  },
  lastOutgoingMessages: { description: 'Outgoing messages of the last `minutes` (default 1440).', output: 'an array of Message objects' },
  checkAccount: {
    description: 'Whether an account exists for a phone number or a username (give exactly one).',
    output: '{ exist: true, chatId, username?, phoneNumber?, fromCache } or { exist: false, chatId: "" }',
  },
  getStateInstance: { description: "The account's state (authorized, notAuthorized, starting, ...).", output: '{ stateInstance }' },
  sendMessage: {
    description: 'Queues a text message (up to 20000 characters) for sending to a chat. Not idempotent: a retry may send twice.',
    output: '{ idMessage: string }',
  },
  checkWhatsapp: { description: 'Whether a phone number has a WhatsApp account.', output: '{ existsWhatsapp: boolean, chatId: string }' },
  getSettings: {
    description: "The instance's settings (webhookUrl, which notifications it produces, send delay).",
    output: 'the settings object',
  },
  setSettings: { description: "Changes some of the instance's settings (give at least one).", output: '{ saveSettings: true }' },
  showMessagesQueue: {
    description: 'Messages waiting in the send queue.',
    output: 'an array of { messageID, type, body, statusMessage: "pending" }',
  },
  clearMessagesQueue: { description: 'Drops every message waiting in the send queue.', output: '{ isCleared: boolean }' },
  lastIncomingMessages: { description: 'Incoming messages of the last `minutes` (default 1440).', output: 'an array of Message objects' },
  receiveNotification: {
    description: 'The oldest waiting notification, waiting up to `receiveTimeout` seconds (5 to 60, default 5) for one.',
    output: '{ receiptId, body } or null',
  },
  deleteNotification: { description: 'Removes a received notification from the queue, by its receiptId.', output: '{ result: boolean }' },
  // Sending
  sendFileByUpload: {
    description:
      'Queues a file of the project (`file`: its path, relative to the project) for sending to a chat; the file is stored by the service. Not idempotent: a retry may send twice.',
    output: '{ idMessage: string, urlFile: string }',
  },
  uploadFile: {
    description: 'Stores a file of the project (`file`: its path) on the service, for sendFileByUrl: answers its link (kept 15 days).',
    output: '{ urlFile: string }',
  },
  sendLocation: {
    description: 'Queues a location (latitude, longitude, optional name and address) for sending.',
    output: '{ idMessage: string }',
  },
  sendContact: { description: 'Queues a contact card (phoneContact and a name or company) for sending.', output: '{ idMessage: string }' },
  sendPoll: {
    description: 'Queues a poll (a question of up to 255 characters, 2 to 12 distinct options); votes arrive as pollUpdateMessage.',
    output: '{ idMessage: string }',
  },
  sendInteractiveButtons: {
    description: 'Queues a message with up to 3 buttons that copy a code, call a number or open a link (Beta on the service).',
    output: '{ idMessage: string }',
  },
  sendInteractiveButtonsReply: {
    description: 'Queues a message with up to 3 reply buttons; a press arrives as a buttonsResponseMessage (Beta on the service).',
    output: '{ idMessage: string }',
  },
  forwardMessages: {
    description: 'Forwards messages of chat `chatIdFrom` to chat `chatId` (queued; each gets a new id).',
    output: '{ messages: string[] } (the new ids)',
  },
  sendTyping: {
    description: 'Shows "typing..." (or recording) in a chat for typingTime ms (1000 to 20000), in the send queue.',
    output: 'nothing',
  },
  // Messages and chats
  getContacts: {
    description:
      "Lists the account's contacts: people (contact list and chats) and group chats; `group` picks one kind, `count` the most recent.",
    output: '[{ id, name, contactName, type }]',
  },
  getContactInfo: {
    description: 'Describes a person (personal chats only): names, archive and disappearing-messages state, business details.',
    output: '{ chatId, name, contactName, avatar, isArchive, isDisappearing, messageExpiration, isBusiness, ... }',
  },
  getAvatar: {
    description: "A person's or group chat's avatar link ('' when none is set).",
    output: '{ urlAvatar: string, available: boolean }',
  },
  getChats: {
    description: "Lists the account's chats, most recently active first, with their archive and disappearing-messages state.",
    output: '[{ id, name, type, archive, ephemeralExpiration, ephemeralSettingTimestamp }]',
  },
  downloadFile: { description: "The link to a file message's file (image, video, document, audio).", output: '{ downloadUrl: string }' },
  deleteMessage: {
    description: 'Deletes a message for everyone, or only for this account with onlySenderDelete: true; journals show it isDeleted.',
    output: 'nothing',
  },
  editMessage: {
    description: "Replaces the text of one of the account's text messages (within 15 minutes of sending); journals show it isEdited.",
    output: '{ idMessage: string } (the edit)',
  },
  readChat: { description: "Marks a chat's incoming messages read (all, or up to idMessage).", output: '{ setRead: boolean }' },
  archiveChat: { description: 'Archives a chat.', output: 'nothing' },
  unarchiveChat: { description: 'Takes a chat out of the archive.', output: 'nothing' },
  setDisappearingChat: {
    description: "Sets a chat's disappearing messages: ephemeralExpiration 0 (off), 86400, 604800 or 7776000 seconds.",
    output: '{ chatId, disappearingMessagesInChat, ephemeralExpiration }',
  },
  // Groups
  createGroup: {
    description:
      'Creates a group chat (`groupName` up to 100 characters) with the given participants; the account is its owner. The service advises one group every 5 minutes at most. Not idempotent.',
    output: '{ created: boolean, chatId, groupInviteLink }',
  },
  getGroupData: {
    description: "A group's data: owner, name, participants (with admin flags), invite link (empty unless the account is an admin).",
    output: '{ groupId, owner, subject, creation, participants, subjectTime, subjectOwner, groupInviteLink }',
  },
  updateGroupName: { description: 'Renames a group (up to 100 characters).', output: '{ updateGroupName: boolean }' },
  updateGroupSettings: {
    description: 'Whether members may edit the group settings and send messages (admins only).',
    output: '{ updateGroupSettings: boolean, reason? }',
  },
  addGroupParticipant: { description: 'Adds a participant to a group (admins only).', output: '{ addParticipant: boolean }' },
  removeGroupParticipant: { description: 'Removes a participant from a group (admins only).', output: '{ removeParticipant: boolean }' },
  setGroupAdmin: { description: 'Makes a participant an admin of a group.', output: '{ setGroupAdmin: boolean }' },
  removeAdmin: { description: "Takes a participant's admin rights away.", output: '{ removeAdmin: boolean }' },
  setGroupPicture: {
    description: "Sets a group's picture from a JPEG file of the project (`file`: its path, relative to the project).",
    output: '{ setGroupPicture: boolean, urlAvatar, reason }',
  },
  leaveGroup: {
    description: 'The account leaves a group; messages sent to it afterwards get the status notInGroup.',
    output: '{ leaveGroup: true } or { removeAdmin: true } (when the account was an admin)',
  },
  // Account, queues and calls
  getStatusInstance: {
    description: "Whether the account's socket to the messenger is open (online while it works).",
    output: "{ statusInstance: 'online' | 'offline' }",
  },
  getStateInstanceHistory: {
    description: "The account's last `count` state changes (default 100), newest first.",
    output: 'an array of { stateInstance, timestamp, phoneNumber }',
  },
  reboot: {
    description: 'Restarts the instance: starting for a moment, then back (a yellowCard account comes back authorized).',
    output: '{ isReboot: boolean }',
  },
  logout: {
    description: 'Logs the account out: notAuthorized until it is linked again (qr or getAuthorizationCode).',
    output: '{ isLogout: boolean }',
  },
  qr: {
    description: 'The QR code to link the account, while it is not authorized.',
    output: "{ type: 'qrCode' | 'alreadyLogged' | 'error', message }",
  },
  getAuthorizationCode: {
    description: 'A code to link the account by phone number, while it is not authorized.',
    output: '{ status: boolean, code: string }',
  },
  getWaSettings: {
    description: 'The account on the messenger: avatar, phone, state, device id.',
    output: '{ avatar, phone, stateInstance, deviceId }',
  },
  getMessagesCount: { description: 'How many messages wait in the send queue.', output: '{ count: number }' },
  getWebhooksCount: { description: 'How many notifications wait in the incoming queue.', output: '{ count: number }' },
  clearWebhooksQueue: {
    description: 'Drops every notification waiting in the incoming queue (at most once a minute).',
    output: '{ isCleared: boolean, reason: string, leftTime? }',
  },
  lastIncomingCalls: {
    description: 'Incoming calls of the last `minutes` (default 1440), newest first.',
    output: 'an array of { type, idMessage, timestamp, from, status, isVideo }',
  },
  lastOutgoingCalls: {
    description: 'Outgoing calls of the last `minutes` (default 1440), newest first.',
    output: 'an array of { type, idMessage, timestamp, from, status, isVideo }',
  },
  setProfilePicture: {
    description: "Sets the account's profile picture (a JPEG file of the project).",
    output: '{ reason: null, urlAvatar: string, setProfilePicture: boolean }',
  },
  // Statuses
  sendTextStatus: {
    description:
      'Posts a text status (story, up to 500 characters, white on backgroundColor) seen by `participants` or every contact for 24 hours (Beta on the service).',
    output: '{ idMessage: string }',
  },
  sendVoiceStatus: {
    description: 'Posts a voice status from urlFile (audio; cut after a minute) for `participants` or every contact (Beta on the service).',
    output: '{ idMessage: string }',
  },
  sendMediaStatus: {
    description:
      'Posts a picture or video status from urlFile with an optional caption, for `participants` or every contact (Beta on the service).',
    output: '{ idMessage: string }',
  },
  deleteStatus: { description: 'Deletes a status the account posted (its viewers no longer see it).', output: 'nothing' },
  getStatusStatistic: {
    description: 'Who a posted status reached: each participant with sent, delivered or read, and when.',
    output: 'an array of { participant, timestamp, status }',
  },
  getIncomingStatuses: {
    description: "Contacts' statuses received in the last `minutes` (default 1440), newest first.",
    output: 'an array of status objects',
  },
  getOutgoingStatuses: {
    description: 'Statuses the account posted in the last `minutes` (default 1440), newest first, with their statusMessage.',
    output: 'an array of status objects',
  },
};

/**
 * The methods whose request carries a file: in a flow, `file` is the path of
 * a file of the project, read when the step runs.
 */
const FILE_INPUT: Partial<Record<ApiMethod, z.ZodType>> = {
  sendFileByUpload: z.strictObject({ ...REQUEST_SHAPES.sendFileByUpload, file: projectFile() }),
  uploadFile: z.strictObject({ ...REQUEST_SHAPES.uploadFile, file: projectFile() }),
  // Groups
  setGroupPicture: z.strictObject({ ...REQUEST_SHAPES.setGroupPicture, file: projectFile() }),
  setProfilePicture: z.strictObject({ ...REQUEST_SHAPES.setProfilePicture, file: projectFile() }),
};

/** `file:` of the upload actions: a file of the project (`msgflow validate` checks a literal path). */
function projectFile() {
  return inputFile(z.string({ error: "'file' must be the path of a file of the project" }).min(1));
}

/** The bytes of the file a step names (relative to the project), and its name when the step gives none. */
async function withFileBytes(ctx: { resolvePath(p: string): string }, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const file = input.file as string;
  let data: Buffer;
  try {
    data = await readFile(ctx.resolvePath(file));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(`'file' ${file}: ${code === 'ENOENT' ? 'no such file in the project' : `cannot be read (${code ?? String(e)})`}`);
  }
  return { ...input, file: data, fileName: input.fileName ?? path.basename(file) };
}

/** The built-in action calling API method `method` on the flow's instance. */
export function apiMethodAction(method: ApiMethod): ActionDefinition<z.ZodType, unknown> {
  const d = DESCRIPTIONS[method];
  return defineAction({
    name: method,
    description: `${d.description} (${METHOD_SPECS[method].httpMethod} ${method}${METHOD_SPECS[method].idempotent ? '' : ', not idempotent'})`,
    input: FILE_INPUT[method] ?? (STRICT_REQUEST_SCHEMAS[method] as z.ZodType),
    output: { description: d.output },
    ...(method === 'checkAccount' ? { checkWith: (w: Readonly<Record<string, unknown>>) => checkAccountTargetRule(w)?.reason } : {}),
    run: async (ctx, input) => {
      const call = ctx.client[method] as (req: unknown, opts: { signal: AbortSignal }) => Promise<unknown>;
      const request = FILE_INPUT[method] ? await withFileBytes(ctx, input as Record<string, unknown>) : input;
      return call.call(ctx.client, request, { signal: ctx.signal });
    },
  });
}

const LogInput = z.strictObject({
  /** Numbers and booleans are accepted (a lone `${{ }}` yields them) and written as text. */
  message: z.union([z.string(), z.number(), z.boolean()], { error: "'message' must be a string" }).transform(String),
  level: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** Extra structured fields for the log line. */
  fields: z.record(z.string(), z.unknown()).optional(),
});

/** `log`: writes a message to the run's logger. */
export const logAction = defineAction({
  name: 'log',
  description: "Writes a message to the run's log.",
  input: LogInput,
  output: { description: '{ message: string, level }' },
  run: async (ctx, input) => {
    ctx.logger[input.level](input.message, input.fields);
    return { message: input.message, level: input.level };
  },
});

/** Registers one action per API method, and `log`. */
export function registerBuiltins(registry: ActionRegistry): void {
  for (const m of API_METHODS) registry.register(apiMethodAction(m), 'built-in');
  registry.register(logAction, 'built-in');
}
