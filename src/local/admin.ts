/**
 * Local-only admin endpoints, for tests and demos (the real service has no
 * such thing). They sit under `/_local/` and need the instance's token like
 * any API call:
 *
 * - `POST /_local/waInstance{id}/incoming/{token}`: inject a message (a
 *   seed-file message object; chatId and typeMessage required). Answers the
 *   stored Message.
 * - `POST /_local/waInstance{id}/state/{token}` `{state}`: authorized |
 *   notAuthorized | blocked | sleepMode | starting | yellowCard. Answers
 *   `{state}`; a change raises stateInstanceChanged. Not persisted: a
 *   restart brings back the config's state.
 * - `GET /_local/waInstance{id}/queue/{token}`: `{pending, failed}` entries of
 *   the send queue.
 * - `POST /_local/waInstance{id}/notification/{token}` `{typeWebhook, ...}`: a
 *   notification as given (stamped with the instance's data and time), queued
 *   when its switch is on. Answers `{queued}`. For flow tests of flows
 *   triggered by statuses: a message that arrives is `incoming` instead.
 * - `GET /_local/waInstance{id}/contacts/{token}`: `{contacts, phonebook}`.
 * - `POST /_local/waInstance{id}/call/{token}` `{from, type?, status?, isVideo?, idMessage?}`:
 *   a call (incoming unless `type: outgoing`), kept for lastIncomingCalls /
 *   lastOutgoingCalls; an incoming one raises incomingCall (`offer` by
 *   default; send the same idMessage again with how it ended). Answers
 *   `{call, notified}`.
 * - `POST /_local/waInstance{id}/block/{token}` `{chatId?, blocked?}`: a
 *   contact blocks the account (`blocked: true`, the default) or unblocks it;
 *   a block raises incomingBlock (`chatState: blocked`; chatId defaults to the
 *   service's placeholder `10000000000@c.us`). Answers `{chatId, blocked, notified}`.
 * - `POST /_local/waInstance{id}/status/{token}` `{chatId, message | urlFile+fileName, ...}`:
 *   a contact posts a status. Answers `{received, status}`; `received: false`
 *   when the sender is not one of the account's contacts.
 */
import { z } from 'zod';
import { MsgflowError } from '../api/errors.js';
import { CALL_STATUSES, INSTANCE_STATES, NOTIFICATION_TYPES } from '../api/notifications.js';
import { issueToValidationError } from '../api/validate.js';
import type { LocalInstance } from './instance/instance.js';
import { MessageInputSchema } from './message-input.js';
import { IncomingStatusSchema } from './instance/statuses.js';
import { errorResponse, json, type LocalRequest, type LocalResponse } from './types.js';

const NotificationInput = z.looseObject({
  typeWebhook: z.enum(NOTIFICATION_TYPES, { error: `'typeWebhook' must be one of ${NOTIFICATION_TYPES.join(', ')}` }),
});

const CallBody = z.strictObject({
  from: z.string({ error: "'from' must be a chat id such as 79001234567@c.us" }).regex(/^\d{1,20}@c\.us$/, {
    error: "'from' must be a chat id such as 79001234567@c.us",
  }),
  type: z.enum(['incoming', 'outgoing'], { error: "'type' must be one of incoming, outgoing" }).optional(),
  status: z.enum(CALL_STATUSES, { error: `'status' must be one of ${CALL_STATUSES.join(', ')}` }).optional(),
  isVideo: z.boolean({ error: "'isVideo' must be a boolean" }).optional(),
  idMessage: z.string({ error: "'idMessage' must be a string" }).min(1, { error: "'idMessage' must not be empty" }).optional(),
});

/** The chat id the service sends in incomingBlock by default: WhatsApp no longer says who blocked. */
const BLOCK_PLACEHOLDER_CHAT = '10000000000@c.us';

const BlockBody = z.strictObject({
  chatId: z
    .string({ error: "'chatId' must be a chat id such as 79001234567@c.us" })
    .regex(/^\d{1,20}@c\.us$/, { error: "'chatId' must be a chat id such as 79001234567@c.us" })
    .default(BLOCK_PLACEHOLDER_CHAT),
  blocked: z.boolean({ error: "'blocked' must be a boolean" }).default(true),
});

const StateBody = z.strictObject({ state: z.enum(INSTANCE_STATES, { error: `'state' must be one of ${INSTANCE_STATES.join(', ')}` }) });

/** Null prototype: `constructor`, `__proto__` and friends are unknown actions, not Object's members. */
const ROUTES: Record<string, 'GET' | 'POST' | undefined> = Object.assign(
  Object.create(null) as Record<string, 'GET' | 'POST'>,
  {
    incoming: 'POST',
    notification: 'POST',
    state: 'POST',
    queue: 'GET',
    contacts: 'GET',
    call: 'POST',
    block: 'POST',
    status: 'POST',
  } as const,
);

/**
 * An admin request past routing and auth. `readBody` is the service's JSON
 * body reader (415, malformed JSON, too deep), called only by the POST routes.
 */
export async function handleAdmin(
  instance: LocalInstance,
  action: string,
  req: LocalRequest,
  readBody: () => unknown,
): Promise<LocalResponse> {
  const expected = ROUTES[action];
  if (!expected) return errorResponse(new MsgflowError('METHOD_NOT_FOUND', { method: action.slice(0, 64) }));
  const got = req.httpMethod.toUpperCase();
  if (got !== expected) {
    return errorResponse(new MsgflowError('HTTP_METHOD_NOT_ALLOWED', { method: action, expected, got: got.slice(0, 16) }), {
      allow: expected,
    });
  }
  switch (action) {
    case 'incoming': {
      const input = parse(MessageInputSchema, readBody());
      return json(200, await instance.inject(input));
    }
    case 'notification': {
      const body = parse(NotificationInput, readBody());
      return json(200, { queued: await instance.relayNotification(body) });
    }
    case 'state': {
      const { state } = parse(StateBody, readBody());
      await instance.setState(state);
      return json(200, { state });
    }
    case 'call': {
      const input = parse(CallBody, readBody());
      return json(200, await instance.receiveCall(input));
    }
    case 'block': {
      const input = parse(BlockBody, readBody());
      return json(200, await instance.receiveBlock(input));
    }
    case 'status':
      return json(200, await instance.receiveStatus(parse(IncomingStatusSchema, readBody())));
    case 'queue':
      return json(200, { pending: instance.sendQueue.pending(), failed: instance.sendQueue.failed() });
    default:
      return json(200, instance.contactsSnapshot());
  }
}

function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const r = schema.safeParse(body);
  if (!r.success) throw issueToValidationError(r.error.issues[0]!);
  return r.data;
}
