/**
 * Which setting switches which notification: the one table the local
 * service's notifier decides by and docs/local-service.md shows. A
 * notification is produced when every switch of its type (and of its message
 * kind, for a message notification) is `yes`, except the outgoing statuses
 * the service documents as impossible to switch off.
 */
import type { SettingsSwitch } from './schemas.js';

/** The switches a notification type needs (`typeWebhook` → setSettings keys that must be `yes`). */
export const NOTIFICATION_SWITCHES: Readonly<Record<string, readonly SettingsSwitch[]>> = {
  incomingMessageReceived: ['incomingWebhook'],
  outgoingMessageReceived: ['outgoingMessageWebhook'],
  outgoingAPIMessageReceived: ['outgoingAPIMessageWebhook'],
  outgoingMessageStatus: ['outgoingWebhook'],
  stateInstanceChanged: ['stateWebhook'],
  incomingCall: ['incomingCallWebhook'],
  incomingBlock: ['incomingBlockWebhook'],
  deviceInfo: ['deviceWebhook'],
  // The service documents quotaExceeded among the incoming notifications; it needs no switch of its own.
  quotaExceeded: ['incomingWebhook'],
};

/** Message kinds (`typeMessage`) that need a switch of their own besides their notification type's. */
export const MESSAGE_KIND_SWITCHES: Readonly<Record<string, SettingsSwitch>> = {
  pollUpdateMessage: 'pollMessageWebhook',
  editedMessage: 'editedMessageWebhook',
  deletedMessage: 'deletedMessageWebhook',
};

/**
 * outgoingMessageStatus statuses produced whatever outgoingWebhook says: the service documents that
 * `noAccount` (and `failed`) cannot be switched off, so that a bot always learns a message went nowhere.
 */
export const UNSWITCHABLE_STATUSES: readonly string[] = ['failed', 'noAccount'];

/** What a notification is, as far as its switches go. */
export interface NotificationFacts {
  typeWebhook: string;
  /** A message notification's kind. */
  typeMessage?: string;
  /** An outgoingMessageStatus notification's status. */
  status?: string;
}

/** Whether `settings` produce a notification: every switch it needs is `yes` (an unknown type needs none). */
export function isSwitchedOn(settings: Readonly<Partial<Record<SettingsSwitch, string>>>, facts: NotificationFacts): boolean {
  if (facts.typeWebhook === 'outgoingMessageStatus' && facts.status !== undefined && UNSWITCHABLE_STATUSES.includes(facts.status)) {
    return true;
  }
  const kind = facts.typeMessage === undefined ? undefined : MESSAGE_KIND_SWITCHES[facts.typeMessage];
  const needed = [...(NOTIFICATION_SWITCHES[facts.typeWebhook] ?? []), ...(kind === undefined ? [] : [kind])];
  return needed.every((s) => settings[s] === 'yes');
}
