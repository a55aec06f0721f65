/**
 * Turning what actions throw into the small, serialisable ErrorInfo the store
 * records, and the runner's own errors.
 */
import type { z } from 'zod';
import { ERROR_CATALOGUE, type ErrorCode } from '../../api/error-codes.js';
import { FlowError, MsgflowError, ValidationError } from '../../api/errors.js';
import type { ErrorInfo } from '../../store/types.js';

/**
 * The code that says what went wrong: an ACTION_FAILED wrapper's cause's
 * (HTTP_STATUS, NOT_ON_MESSENGER...), else the error's own: what
 * `steps.<id>.error.code` and a failure event carry.
 */
export function failureCode(e: unknown): string | undefined {
  let cur = e;
  while (cur instanceof MsgflowError && cur.code === 'ACTION_FAILED' && cur.cause instanceof MsgflowError) cur = cur.cause;
  return cur instanceof MsgflowError ? cur.code : undefined;
}

export function errorInfo(e: unknown, step?: string, item?: number): ErrorInfo {
  const info: ErrorInfo = { message: e instanceof Error ? e.message : String(e) };
  if (e instanceof MsgflowError) info.code = e.code;
  if (e instanceof ValidationError && e.field) info.field = e.field;
  const field = (e as { field?: unknown } | null)?.field;
  if (info.field === undefined && typeof field === 'string') info.field = field;
  if (step !== undefined) info.step = step;
  if (item !== undefined) info.item = item;
  return info;
}

/**
 * The error an ErrorInfo records, rebuilt where another process recorded it
 * (a worker's fatal error, read by the run): the same message and, when it
 * had one, the same catalogue code, so the run records and classifies it as
 * the worker saw it.
 */
export function fromErrorInfo(info: ErrorInfo): Error {
  if (info.code === undefined || !Object.hasOwn(ERROR_CATALOGUE, info.code)) return new Error(info.message);
  const e = new MsgflowError(info.code as ErrorCode);
  e.message = info.message;
  return e;
}

/**
 * STEP_INPUT_INVALID naming the step, the item and every offending field:
 * `step 'check' item 3: with.phoneNumber: Invalid input: expected string, received undefined`.
 */
export function inputInvalid(step: string, item: number | undefined, error: z.ZodError): FlowError & { field?: string } {
  const parts = error.issues.map((i) => {
    const path = i.path.map(String).join('.');
    return `${path ? `with.${path}` : 'with'}: ${i.message}`;
  });
  const first = error.issues[0]?.path.map(String).join('.');
  const err = new FlowError('STEP_INPUT_INVALID', {
    step,
    item: item === undefined ? '' : ` item ${item}`,
    details: parts.join('; '),
  }) as FlowError & { field?: string };
  err.field = first ? `with.${first}` : 'with';
  return err;
}
