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
import { isSwitchedOn } from '../../api/switches.js';
import { openJsonDoc } from '../persist/json-doc.js';

const StoredSettings = z.strictObject(REQUEST_SHAPES.setSettings);
type StoredSettings = z.output<typeof StoredSettings>;

export type SettingsInput = ParsedRequest<'setSettings'>;

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
      keepOnlineStatus: 'no',
      incomingCallWebhook: 'no',
      incomingBlockWebhook: 'no',
      deviceWebhook: 'no',
      editedMessageWebhook: 'no',
      deletedMessageWebhook: 'no',
      statusInstanceWebhook: 'no',
      enableMessagesHistory: 'no',
      sharedSession: 'no',
      countryInstance: '',
      typeAccount: '',
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
   * Whether notifications of this type are produced (api/switches.ts decides); for a message
   * notification, `typeMessage` names its kind (some kinds need a switch of their own too), for
   * an outgoingMessageStatus, `status` its status (failed and noAccount cannot be switched off).
   */
  produces(type: string, detail: { typeMessage?: string; status?: string } = {}): boolean {
    return isSwitchedOn(this.current(), { typeWebhook: type, ...detail });
  }
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
