import { API_METHODS } from '../api/methods.js';
import type { InstanceApi } from '../api/types.js';

/**
 * An InstanceApi whose client is built on first use: the engine asks for a
 * client synchronously, but opening the local service (or checking who owns
 * it) is asynchronous and should only happen for instances a run really uses.
 */
export function lazyApi(get: () => Promise<InstanceApi>): InstanceApi {
  const api = {} as Record<string, unknown>;
  for (const m of API_METHODS) {
    api[m] = async (request: unknown, options: unknown) => {
      const client = (await get()) as unknown as Record<string, (r: unknown, o: unknown) => Promise<unknown>>;
      return client[m]!(request, options);
    };
  }
  return api as unknown as InstanceApi;
}
