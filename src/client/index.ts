/** The typed client of the instance API: createClient and its parts. */
export { createClient, type MsgflowClient } from './client.js';
export { createHttpTransport, type HttpTransportOptions } from './http-transport.js';
export {
  CLIENT_DEFAULTS,
  parseClientOptions,
  type ClientLogger,
  type ClientOptions,
  type JitterMode,
  type ResolvedClientOptions,
} from './options.js';
export { computeBackoff, parseRetryAfter, type BackoffOptions } from './backoff.js';
export { interpretResponse, type Outcome, type RetryRule } from './response.js';
export type { Transport, TransportRequest, TransportResponse } from './transport.js';
