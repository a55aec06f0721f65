/**
 * A flow test's `faults:`: the Nth call of a method (as the flow makes it,
 * counted per case) answers the scripted answer instead of reaching the
 * local service. The answer is what the client's own pure decision
 * (client/response.ts) makes of that response, so a fault reaches the flow
 * exactly as the service's answer would: the same typed error, code and
 * Retry-After. The client's retries of an answer the service gives are not
 * made for an injected one: the flow meets it as the call's outcome.
 */
import { interpretResponse } from '../../client/response.js';
import type { ApiInterceptor } from '../../client/interceptors.js';
import type { TransportResponse } from '../../client/transport.js';
import type { Clock } from '../../util/clock.js';
import type { FlowTestCase } from './schema.js';

type Fault = NonNullable<FlowTestCase['faults']>[number];

/** The response a fault scripts for call `n` of `method`. */
function scripted(fault: Fault, n: number, method: string): TransportResponse {
  if (fault.answer === 'rate_limit_exceeded') {
    return {
      statusCode: 200,
      headers: {},
      body: { status: false, data: { status: 'fail', reason: 'rate_limit_exceeded', retryAfter: fault.retryAfter ?? 7200 } },
    };
  }
  const headers: Record<string, string> = fault.retryAfter === undefined ? {} : { 'retry-after': String(fault.retryAfter) };
  return { statusCode: fault.answer, headers, body: { message: `fault injected by the flow test (call ${n} of ${method})` } };
}

/**
 * Counts the calls of each method in `calls` (shared by the case's clients)
 * and answers the ones a fault names.
 */
export function faultInterceptor(faults: readonly Fault[], calls: Map<string, number>, clock: Clock): ApiInterceptor {
  return {
    name: 'faults',
    async call(c, next) {
      const n = (calls.get(c.method) ?? 0) + 1;
      calls.set(c.method, n);
      const fault = faults.find((f) => f.method === c.method && (Array.isArray(f.call) ? f.call.includes(n) : f.call === n));
      if (!fault) return next();
      const outcome = interpretResponse(c.method, scripted(fault, n, c.method), {}, clock.now());
      if (outcome.ok) return outcome.value;
      throw outcome.error;
    },
  };
}
