/**
 * The service produces a notification type only when its switch is on
 * (setSettings: incomingWebhook, outgoingWebhook, …), and a new instance has
 * them all off. The consumer turns on the switches it needs for an instance
 * (the types its triggered flows use, plus incoming messages and outgoing
 * statuses, which waitForReply and files.broadcast read), leaving the others
 * as they are.
 */
import type { NotificationType } from '../../api/notifications.js';
import { MESSAGE_KIND_SWITCHES, NOTIFICATION_SWITCHES } from '../../api/switches.js';
import type { InstanceApi, InstanceSettings } from '../../api/types.js';
import type { Logger } from '../../engine/action.js';

/** Types always consumed: replies (waitForReply) and statuses (files.broadcast). */
const ALWAYS: readonly NotificationType[] = ['incomingMessageReceived', 'outgoingMessageStatus'];

/**
 * Turns on the switches of `types` (and of the always-consumed types) that
 * are off, and those of the message `kinds` triggers name that need their
 * own (pollUpdateMessage: pollMessageWebhook). In poll mode a set `webhookUrl` means the service pushes instead
 * of queueing: warned about, not changed. Best effort: a failure is logged,
 * the consumer runs anyway.
 */
export async function ensureSwitches(
  client: InstanceApi,
  instance: string,
  mode: 'poll' | 'webhook',
  types: readonly NotificationType[],
  logger: Logger,
  kinds: readonly string[] = [],
): Promise<void> {
  try {
    const settings: InstanceSettings = await client.getSettings({});
    // The one switch table (api/switches.ts): a type's switches, and those message kinds need of their own.
    const wanted = [
      ...[...ALWAYS, ...types].flatMap((t) => NOTIFICATION_SWITCHES[t] ?? []),
      ...kinds.flatMap((k) => MESSAGE_KIND_SWITCHES[k] ?? []),
    ];
    const off = [...new Set(wanted)].filter((s) => settings[s] !== 'yes');
    if (mode === 'poll' && settings.webhookUrl) {
      logger.warn(
        `instance ${instance} has a webhookUrl: the service pushes its notifications there, so polling receives none (clear it, or use notifications: webhook)`,
      );
    }
    if (off.length === 0) return;
    await client.setSettings(Object.fromEntries(off.map((s) => [s, 'yes'])));
    logger.info(`instance ${instance}: turned on ${off.join(', ')} (setSettings) so its notifications are produced`);
  } catch (e) {
    logger.warn(
      `instance ${instance}: could not check its notification settings (${e instanceof Error ? e.message : String(e)}); notifications it does not produce never arrive`,
    );
  }
}
