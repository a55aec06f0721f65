/**
 * The instance's settings (getSettings/setSettings), kept in settings.json
 * (lowdb). Only what setSettings changed is stored; the rest comes from the
 * config's `settings:` and then the real service's defaults ("after creating
 * an instance, all settings are turned off by default": webhookUrl empty,
 * every yes/no switch `no`). Saved settings apply at once (the real service
 * takes up to 5 minutes).
 */
import type { Low } from 'lowdb';
import { z } from 'zod';
import { REQUEST_SHAPES } from '../../api/schemas.js';
import type { InstanceSettings, ParsedRequest } from '../../api/types.js';
import type { NotificationType } from '../../api/notifications.js';
import { openJsonDoc } from '../persist/json-doc.js';

const StoredSettings = z.strictObject(REQUEST_SHAPES.setSettings);
type StoredSettings = z.output<typeof StoredSettings>;

export type SettingsInput = ParsedRequest<'setSettings'>;

/** Which switch turns each notification type on. */
const SWITCH_OF: Record<NotificationType, keyof InstanceSettings> = {
  incomingMessageReceived: 'incomingWebhook',
  outgoingMessageReceived: 'outgoingMessageWebhook',
  outgoingAPIMessageReceived: 'outgoingAPIMessageWebhook',
  outgoingMessageStatus: 'outgoingWebhook',
  stateInstanceChanged: 'stateWebhook',
  incomingCall: 'incomingWebhook',
};

/** Message kinds that also need a switch of their own (the service documents pollMessageWebhook for poll votes). */
const KIND_SWITCH: Partial<Record<string, keyof InstanceSettings>> = {
  pollUpdateMessage: 'pollMessageWebhook',
};

export interface SettingsBase {
  /** The account's own chat id (getSettings' `wid`). */
  wid: string;
  /** The config's `settings:` for this instance. */
  base: Partial<SettingsInput>;
  /** The config's send interval: delaySendMessagesMilliseconds until set. */
  sendIntervalMs: number;
}

export class SettingsStore {
  private constructor(
    private readonly doc: Low<StoredSettings>,
    private readonly defaults: SettingsBase,
  ) {}

  /** The settings saved in `file` (`shown` names it in errors), over `defaults`. */
  static async open(file: string, shown: string, defaults: SettingsBase): Promise<SettingsStore> {
    return new SettingsStore(await openJsonDoc(file, shown, StoredSettings, {}), defaults);
  }

  current(): InstanceSettings {
    return {
      wid: this.defaults.wid,
      webhookUrl: '',
      webhookUrlToken: '',
      delaySendMessagesMilliseconds: this.defaults.sendIntervalMs,
      markIncomingMessagesReaded: 'no',
      markIncomingMessagesReadedOnReply: 'no',
      outgoingWebhook: 'no',
      outgoingMessageWebhook: 'no',
      outgoingAPIMessageWebhook: 'no',
      incomingWebhook: 'no',
      stateWebhook: 'no',
      pollMessageWebhook: 'no',
      ...definedOnly(this.defaults.base),
      ...definedOnly(this.doc.data),
    };
  }

  /** Saves the given settings (the others stay); resolves once written. */
  async save(input: SettingsInput): Promise<void> {
    this.doc.data = { ...this.doc.data, ...definedOnly(input) };
    await this.doc.write();
  }

  /**
   * Whether notifications of this type are produced; for a message
   * notification, `typeMessage` names its kind: some kinds need a switch of
   * their own too.
   */
  produces(type: NotificationType, detail: { typeMessage?: string } = {}): boolean {
    const extra = detail.typeMessage === undefined ? undefined : KIND_SWITCH[detail.typeMessage];
    return this.current()[SWITCH_OF[type]] === 'yes' && (extra === undefined || this.current()[extra] === 'yes');
  }
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
