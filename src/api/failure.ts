/**
 * The one failure classification msgflow uses, decided by error code (never by
 * message text):
 *
 * - `fatal`: the instance itself cannot serve (wrong token, unknown instance,
 *   account not authorized): stop the job at the first one and tell the user
 *   what to fix; trying the next item would fail the same way.
 * - `retryable`: the call may succeed later (network, 5xx, 429, timeouts): try
 *   again with backoff; a run of them stops the job.
 * - `definite`: this item's answer is final (400, 404, an invalid number):
 *   record it, never retry it.
 *
 * Jobs and the step runner (`retry:`) both decide through {@link classify}.
 */
import type { ErrorCode } from './error-codes.js';

export type FailureClass = 'fatal' | 'retryable' | 'definite';

/** Codes whose failure concerns the whole instance, not one item. */
export const FATAL_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'UNAUTHORIZED',
  'INSTANCE_NOT_FOUND',
  'INSTANCE_NOT_READY',
  'ACCOUNT_NOT_AUTHORIZED',
  'CLIENT_CLOSED',
  'CLIENT_OPTIONS_INVALID',
  // Nothing ever answered at apiUrl: every item would be refused the same way.
  'CONNECTION_REFUSED',
  // The plan's quota is used up: every further call is refused until the plan changes.
  'QUOTA_EXCEEDED',
]);

/** Codes of failures that may pass by themselves. */
export const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'NETWORK_ERROR',
  'TIMEOUT',
  'TOO_MANY_REQUESTS',
  'CHECK_ACCOUNT_RATE_LIMIT',
  'STEP_TIMEOUT',
  'INSTANCE_STARTING',
  'SERVER_ERROR',
  'INTERNAL',
  // An instance-wide pause ends by itself (engine/run/pauses.ts).
  'INSTANCE_PAUSED',
  // checkWhatsapp ran out of time on the service's side: the same check may answer later.
  'CHECK_PHONE_TIMEOUT',
  // Closed before the answer: like a timeout (mayHaveBeenProcessed says a write may have happened).
  'REQUEST_CLOSED',
]);

function codeOf(error: unknown): string | undefined {
  if (error && typeof error === 'object' && 'code' in error && typeof (error as { code: unknown }).code === 'string') {
    return (error as { code: string }).code;
  }
  return undefined;
}

function statusOfError(error: unknown): number | undefined {
  if (error && typeof error === 'object' && 'status' in error && typeof (error as { status: unknown }).status === 'number') {
    return (error as { status: number }).status;
  }
  return undefined;
}

/**
 * Classifies an error by its catalogue code; an error without one (a plain
 * Error from a plugin) is `definite`, unless its cause classifies otherwise.
 * For API_ERROR (an answer with no more specific code) the HTTP status
 * decides: 401/403 fatal, 408/429/5xx retryable, other 4xx definite; for
 * HTTP_STATUS (another server's answer to http.request): 408/429/5xx
 * retryable, any other definite.
 *
 * @example classify(new ApiError('addContact', 401, 'Unauthorized', { code: 'UNAUTHORIZED' })) // 'fatal'
 */
export function classify(error: unknown): FailureClass {
  const code = codeOf(error);
  if (code && FATAL_CODES.has(code as ErrorCode)) return 'fatal';
  if (code && RETRYABLE_CODES.has(code as ErrorCode)) return 'retryable';
  if (code === 'API_ERROR') {
    const status = statusOfError(error);
    if (status === 401 || status === 403) return 'fatal';
    if (status === undefined || status === 408 || status === 429 || status >= 500) return 'retryable';
    return 'definite';
  }
  // An answer of another server (http.request): its status decides, and no status makes the instance unusable.
  if (code === 'HTTP_STATUS') {
    const status = statusOfError(error) ?? 0;
    return status === 408 || status === 429 || status >= 500 ? 'retryable' : 'definite';
  }
  if (code === undefined && error instanceof Error && error.cause !== undefined && error.cause !== error) {
    return classify(error.cause);
  }
  return 'definite';
}

/** Codes of answers after which the service may still have processed the request (it failed while or after doing it). */
const MAYBE_PROCESSED_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['SERVER_ERROR', 'INTERNAL', 'REQUEST_CLOSED']);

/**
 * Whether a failed call may have been processed all the same (a write may
 * have happened): no answer although the request may have left (a timeout, a
 * reset: the NetworkError says so), or a 5xx. A refusal (4xx, 429, a refused
 * connection) was not processed: sending again cannot duplicate it. Decided
 * by code, like {@link classify}.
 */
export function mayHaveBeenProcessed(error: unknown): boolean {
  const reached = (error as { mayHaveReachedServer?: unknown } | null)?.mayHaveReachedServer;
  if (typeof reached === 'boolean') return reached;
  const code = codeOf(error);
  if (code && MAYBE_PROCESSED_CODES.has(code as ErrorCode)) return true;
  if (code === 'API_ERROR') return (statusOfError(error) ?? 0) >= 500;
  if (code === undefined && error instanceof Error && error.cause !== undefined && error.cause !== error)
    return mayHaveBeenProcessed(error.cause);
  return false;
}
