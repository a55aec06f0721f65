/**
 * Built-in actions: one per API method, named after it, taking the method's
 * strict request schema as `with:` (so a typo such as `chatID` is caught when
 * the flow is loaded), and `log`.
 */
import { z } from 'zod';
import { API_METHODS, METHOD_SPECS, type ApiMethod } from '../../api/methods.js';
import { STRICT_REQUEST_SCHEMAS } from '../../api/schemas.js';
import { checkAccountTargetRule } from '../../api/validate.js';
import { defineAction, type ActionDefinition } from '../action.js';
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
};

/** The built-in action calling API method `method` on the flow's instance. */
export function apiMethodAction(method: ApiMethod): ActionDefinition<z.ZodType, unknown> {
  const d = DESCRIPTIONS[method];
  return defineAction({
    name: method,
    description: `${d.description} (${METHOD_SPECS[method].httpMethod} ${method}${METHOD_SPECS[method].idempotent ? '' : ', not idempotent'})`,
    input: STRICT_REQUEST_SCHEMAS[method] as z.ZodType,
    output: { description: d.output },
    ...(method === 'checkAccount' ? { checkWith: (w: Readonly<Record<string, unknown>>) => checkAccountTargetRule(w)?.reason } : {}),
    run: (ctx, input) => {
      const call = ctx.client[method] as (req: unknown, opts: { signal: AbortSignal }) => Promise<unknown>;
      return call.call(ctx.client, input, { signal: ctx.signal });
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
