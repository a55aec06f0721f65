/**
 * What Run now needs beyond a flow's inputs: the sample event a
 * notification-triggered flow is started with (checked like a notification
 * the flow would receive, within size and depth limits), and what a run
 * started now would wait for before it does its work (a closed send window),
 * so that the page can say so before it starts the run.
 */
import { randomBytes } from 'node:crypto';
import { isChatId } from '../api/chat-id.js';
import { MsgflowError } from '../api/errors.js';
import type { Flow, FlowNotificationTrigger } from '../engine/flow/types.js';
import { chatIdOf, eventOf, parseNotification, textOf, type Notification } from '../engine/notify/body.js';
import { triggerMatches } from '../engine/notify/match.js';
import type { ActionRegistry } from '../engine/registry/registry.js';

/** A sample event's JSON text may be at most this long (a real notification is 1-3 KiB). */
export const EVENT_MAX_BYTES = 64 * 1024;
/** And nested at most this deep (a message notification is 4 levels deep). */
export const EVENT_MAX_DEPTH = 8;

const MESSAGE_TYPES = ['incomingMessageReceived', 'outgoingMessageReceived', 'outgoingAPIMessageReceived'];
/** Types about the account, not a chat: no chat id, no message id. */
const CHATLESS = ['stateInstanceChanged', 'quotaExceeded', 'deviceInfo'];

const bad = (field: string, reason: string) => new MsgflowError('UI_BAD_REQUEST', { field, reason });

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The path of the first value nested deeper than `max` levels (the object itself is level 1), or undefined. */
function tooDeep(v: unknown, max: number, at = ''): string | undefined {
  if (v === null || typeof v !== 'object') return undefined;
  if (max === 0) return at || '(top)';
  for (const [k, child] of Object.entries(v)) {
    const found = tooDeep(child, max - 1, at ? `${at}.${k}` : k);
    if (found) return found;
  }
  return undefined;
}

/** Why `body` does not start the flow (its type is already the trigger's): the chat or the text, named by field. */
function mismatch(t: FlowNotificationTrigger, body: Notification): MsgflowError {
  const chatField = MESSAGE_TYPES.includes(t.type) ? 'event.senderData.chatId' : 'event.chatId';
  if (t.chatId !== undefined && chatIdOf(body) !== t.chatId)
    return bad(chatField, `the flow starts only for chat ${t.chatId}, got ${JSON.stringify(chatIdOf(body) ?? null)}`);
  const text = textOf(body);
  return bad(
    'event.messageData',
    text === undefined
      ? `the flow starts on messages whose text matches /${t.text}/i: the event has no text`
      : `text ${JSON.stringify(text)} does not match /${t.text}/i, so this message would not start the flow`,
  );
}

/**
 * The `event` a Run now of a notification-triggered flow starts with, from
 * the request's `event`: a notification body of the flow's type (type,
 * time and message id are filled in when absent), refused with the field
 * named when it is too large or deep, has no valid chat id, or would not
 * start the flow. As flows see it: the instance id removed, the instance's
 * config name added (eventOf).
 */
export function sampleEvent(flow: Flow, raw: unknown, now: number): Record<string, unknown> {
  const t = flow.on.notification;
  if (!t) throw bad('event', `flow '${flow.name}' is not started by notifications (it has no on.notification), so it has no event`);
  if (!isObj(raw)) throw bad('event', 'expected a JSON object: the notification the flow would receive');
  // Depth before size: serialising a very deep value to measure it would overflow the stack.
  const deep = tooDeep(raw, EVENT_MAX_DEPTH);
  if (deep) throw bad(`event.${deep}`, `nested deeper than ${EVENT_MAX_DEPTH} levels`);
  const size = Buffer.byteLength(JSON.stringify(raw));
  if (size > EVENT_MAX_BYTES) throw bad('event', `${size} bytes, over the limit of ${EVENT_MAX_BYTES}`);
  const body: Obj = { typeWebhook: t.type, timestamp: Math.floor(now / 1000), ...raw };
  if (body.typeWebhook !== t.type)
    throw bad('event.typeWebhook', `expected '${t.type}' (the flow's on.notification type), got ${JSON.stringify(body.typeWebhook)}`);
  if (!CHATLESS.includes(t.type) && t.type !== 'incomingBlock') {
    body.idMessage ??= `SAMPLE${randomBytes(8).toString('hex').toUpperCase()}`;
  }
  // Parsed as a received notification is: the checks below read its typed fields.
  const notification = parseNotification(body)!;
  if (!CHATLESS.includes(t.type)) {
    const chatId = chatIdOf(notification);
    const field = MESSAGE_TYPES.includes(t.type) ? 'event.senderData.chatId' : t.type === 'incomingCall' ? 'event.from' : 'event.chatId';
    if (chatId === undefined || !isChatId(chatId))
      throw bad(field, `expected a chat id such as 79001234567@c.us (or a group's …@g.us), got ${JSON.stringify(chatId ?? null)}`);
  }
  if (!triggerMatches(t, t.instance, notification)) throw mismatch(t, notification);
  return eventOf(notification, t.instance);
}

/** A step that would wait before its work when the flow starts now. */
export interface StartWaitView {
  step: string;
  action: string;
  /** When the wait ends; absent: the step will not do its work (see ActionDefinition.firstWait). */
  until?: number;
  reason: string;
}

/** What the flow's steps would wait for if it started at `now` (the actions' firstWait, from `with:` as written). */
export function startWaits(flow: Flow, registry: ActionRegistry, now: number, zone: string): StartWaitView[] {
  const out: StartWaitView[] = [];
  for (const s of flow.steps) {
    let wait;
    try {
      wait = registry.get(s.uses)?.firstWait?.(s.with, now, zone);
    } catch {
      // A plugin's firstWait that throws says nothing about the run: Run now goes on as before.
      wait = undefined;
    }
    if (wait) out.push({ step: s.id, action: s.uses, ...wait });
  }
  return out;
}
