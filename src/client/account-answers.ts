/**
 * Answer checks of the account, queue and call methods (getStatusInstance …
 * setProfilePicture): whether a 2xx body has the documented success shape.
 * Only the fields a caller's types promise are checked; fields the service
 * adds are kept, not refused.
 */
import type { ApiMethod } from '../api/methods.js';

type Rec = Record<string, unknown>;
const isRecord = (v: unknown): v is Rec => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The field each object answer must carry, and its type. */
const FIELD: Partial<Record<ApiMethod, [field: string, type: 'string' | 'boolean' | 'number']>> = {
  getStatusInstance: ['statusInstance', 'string'],
  reboot: ['isReboot', 'boolean'],
  logout: ['isLogout', 'boolean'],
  qr: ['type', 'string'],
  getAuthorizationCode: ['status', 'boolean'],
  getWaSettings: ['stateInstance', 'string'],
  getMessagesCount: ['count', 'number'],
  getWebhooksCount: ['count', 'number'],
  clearWebhooksQueue: ['isCleared', 'boolean'],
  setProfilePicture: ['setProfilePicture', 'boolean'],
};

/** The methods answering an array of records, and the field each record carries. */
const LIST_OF: Partial<Record<ApiMethod, string>> = {
  getStateInstanceHistory: 'stateInstance',
  lastIncomingCalls: 'idMessage',
  lastOutgoingCalls: 'idMessage',
};

/** Why `body` is not the success answer of `method`, or undefined when it is (or the method is not one of these). */
export function accountAnswerProblem(method: ApiMethod, body: unknown): string | undefined {
  const field = FIELD[method];
  if (field) {
    const [name, type] = field;
    return isRecord(body) && typeof body[name] === type ? undefined : `expected {${name}: ${type}}`;
  }
  const item = LIST_OF[method];
  if (item === undefined) return undefined;
  if (!Array.isArray(body)) return 'expected an array';
  return body.every((r) => isRecord(r) && typeof r[item] === 'string') ? undefined : `expected an array of records with ${item}`;
}
