/**
 * The run's ownership before every write: a writing call (METHOD_SPECS[m].writes)
 * first checks that this process still owns the run (ownership.ts), so a
 * process whose lease lapsed (another one took the run over) writes nothing more.
 */
import type { ApiInterceptor } from '../../../client/interceptors.js';

export function ownershipInterceptor(owner: { check(): Promise<void> }): ApiInterceptor {
  return {
    name: 'ownership',
    appliesTo: (_method, spec) => spec.writes,
    async call(_c, next) {
      await owner.check();
      return next();
    },
  };
}
