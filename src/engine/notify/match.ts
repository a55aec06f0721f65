/**
 * Which flows a notification starts: `on.notification` of each flow against
 * the notification's type, instance, chat and text.
 */
import type { Flow, FlowNotificationTrigger } from '../flow/types.js';
import { chatIdOf, textOf, typeMessageOf, type Notification } from './body.js';
import { textPattern } from '../text-pattern.js';

/** Each trigger's text pattern, compiled once. */
// cache: keyed by the loaded trigger object itself (one flow's own `on.notification`), so no two flows share an entry, and an entry goes with its flow
const patterns = new WeakMap<FlowNotificationTrigger, RegExp>();

/** The trigger's text pattern (the loader has checked it compiles). */
function pattern(t: FlowNotificationTrigger, text: string): RegExp {
  let re = patterns.get(t);
  if (!re) {
    re = textPattern(text);
    patterns.set(t, re);
  }
  return re;
}

/**
 * Whether the notification (of instance `instanceName`, a config name)
 * matches the trigger: its type, chat, message kind (`typeMessage`) and text. The text is trimmed before matching, so `^stop$`
 * matches "STOP " too; a message without text never matches a `text:`.
 */
export function triggerMatches(t: FlowNotificationTrigger, instanceName: string, n: Notification): boolean {
  if (t.instance !== instanceName || t.type !== n.typeWebhook) return false;
  if (t.chatId !== undefined && chatIdOf(n) !== t.chatId) return false;
  if (t.typeMessage !== undefined && !kindMatches(t.typeMessage, typeMessageOf(n))) return false;
  if (t.text === undefined) return true;
  const text = textOf(n);
  return text !== undefined && pattern(t, t.text).test(text.trim());
}

/** `typeMessage:` of a trigger (one kind or a list) against the message's kind. */
function kindMatches(wanted: string | readonly string[], kind: string | undefined): boolean {
  return kind !== undefined && (typeof wanted === 'string' ? wanted === kind : wanted.includes(kind));
}

/** The flows this notification starts. */
export function flowsFor(flows: readonly Flow[], instanceName: string, n: Notification): Flow[] {
  return flows.filter((f) => f.on.notification !== undefined && triggerMatches(f.on.notification, instanceName, n));
}

/** Config names of the instances whose notifications some flow is triggered by. */
export function triggeredInstances(flows: readonly Flow[]): string[] {
  return [...new Set(flows.flatMap((f) => (f.on.notification ? [f.on.notification.instance] : [])))].sort();
}
