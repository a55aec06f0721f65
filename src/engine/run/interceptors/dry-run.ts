/**
 * A dry run's client: every writing method (METHOD_SPECS[m].writes) is
 * refused before it reaches the instance, so an action that predicts
 * (`dryRun: true`) cannot change anything by mistake.
 */
import { FlowError } from '../../../api/errors.js';
import type { ApiInterceptor } from '../../../client/interceptors.js';

export const dryRunInterceptor: ApiInterceptor = {
  name: 'dry-run',
  appliesTo: (_method, spec) => spec.writes,
  call: (c) => Promise.reject(new FlowError('DRY_RUN_WRITE', { method: c.method })),
};
