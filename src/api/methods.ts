/**
 * The catalogue of the eight API methods: how each is called and how it may be
 * retried. Client, local service and built-in actions all read this one table.
 */
export const API_METHODS = [
  'addContact',
  'editContact',
  'deleteContact',
  'getChatHistory',
  'getMessage',
  'sendFileByUrl',
  'lastOutgoingMessages',
  'checkAccount',
] as const;

export type ApiMethod = (typeof API_METHODS)[number];

export interface MethodSpec {
  readonly name: ApiMethod;
  readonly httpMethod: 'GET' | 'POST';
  /**
   * Whether repeating the call has the same effect as making it once. A
   * non-idempotent call that may have reached the server is never retried:
   * a second sendFileByUrl would send the file twice.
   */
  readonly idempotent: boolean;
  /**
   * Whether the call changes anything on the instance (a contact, a message).
   * A dry run never makes a writing call.
   */
  readonly writes: boolean;
  /** The service's published requests/second for this method. */
  readonly defaultRatePerSecond: number;
}

export const METHOD_SPECS: Readonly<Record<ApiMethod, MethodSpec>> = Object.freeze({
  addContact: { name: 'addContact', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 10 },
  editContact: { name: 'editContact', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 10 },
  deleteContact: { name: 'deleteContact', httpMethod: 'POST', writes: true, idempotent: true, defaultRatePerSecond: 10 },
  getChatHistory: { name: 'getChatHistory', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  getMessage: { name: 'getMessage', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 10 },
  sendFileByUrl: { name: 'sendFileByUrl', httpMethod: 'POST', writes: true, idempotent: false, defaultRatePerSecond: 50 },
  lastOutgoingMessages: { name: 'lastOutgoingMessages', httpMethod: 'GET', writes: false, idempotent: true, defaultRatePerSecond: 1 },
  checkAccount: { name: 'checkAccount', httpMethod: 'POST', writes: false, idempotent: true, defaultRatePerSecond: 10 },
});

export function isApiMethod(name: string): name is ApiMethod {
  return (API_METHODS as readonly string[]).includes(name);
}

/** Per-method requests/second; 0 means unlimited. */
export type RateLimits = Partial<Record<ApiMethod, number>>;

export function defaultRateLimits(): Record<ApiMethod, number> {
  const out = {} as Record<ApiMethod, number>;
  for (const m of API_METHODS) out[m] = METHOD_SPECS[m].defaultRatePerSecond;
  return out;
}
