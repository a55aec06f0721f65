/**
 * Each client call of a traced unit as a span under the unit's: the method,
 * the instance's config name (never its id or token) and the outcome (the
 * error code of a failed call).
 */
import { MsgflowError } from '../../../api/errors.js';
import type { ApiInterceptor } from '../../../client/interceptors.js';
import type { TraceSpan } from '../tracing.js';

export function tracingInterceptor(unit: TraceSpan, instance: string): ApiInterceptor {
  return {
    name: 'tracing',
    async call(c, next) {
      const span = unit.child(`api ${c.method}`, {
        'msgflow.method': c.method,
        'msgflow.instance': instance,
        'msgflow.writes': c.spec.writes,
      });
      try {
        const out = await next();
        span.setAttributes({ 'msgflow.outcome': 'ok' });
        span.end();
        return out;
      } catch (e) {
        const code = e instanceof MsgflowError ? e.code : 'ERROR';
        span.setAttributes({ 'msgflow.outcome': code });
        span.end({ error: { code } });
        throw e;
      }
    },
  };
}
