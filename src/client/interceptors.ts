/**
 * The client interceptor chain: what wraps the calls of an instance's client
 * (a dry run's refusal, the run's ownership check, instance-wide pauses,
 * metrics, a flow test's injected faults), as an ordered list of small
 * interceptors around ONE InstanceApi built once. Each interceptor is a
 * module where its knowledge lives; none of them is a Proxy, and the client
 * itself (validation, pacing, retries, error mapping) stays underneath.
 *
 * @example
 * const api = interceptApi(client, [
 *   { name: 'log', call: async (c, next) => (console.log(c.method), next()) },
 * ]);
 */
import { API_METHODS, METHOD_SPECS, type ApiMethod, type MethodSpec } from '../api/methods.js';
import type { CallOptions, InstanceApi } from '../api/types.js';
import type { MsgflowClient, NotificationsOptions } from './client.js';

/** One call going down the chain. Interceptors may replace `request` and `options` before they call `next`. */
export interface ApiCall {
  readonly method: ApiMethod;
  /** The method's row of METHOD_SPECS (writes, idempotent...). */
  readonly spec: MethodSpec;
  request: unknown;
  options: CallOptions;
}

export interface ApiInterceptor {
  /** Names it in stack traces and tests (`dry-run`, `ownership`, `pauses`, `metrics`, `faults`...). */
  readonly name: string;
  /**
   * The methods it handles, asked once per method when the chain is built:
   * a call of any other method does not pass through it (a check of the
   * run's ownership before a write is not in a checkAccount's way).
   * @default every method
   */
  appliesTo?(method: ApiMethod, spec: MethodSpec): boolean;
  /**
   * Handles a call: answer it itself, or call `next()` (the rest of the
   * chain, then the client) and return or change what it gives.
   */
  call(c: ApiCall, next: () => Promise<unknown>): Promise<unknown>;
}

/** An intercepted InstanceApi, with the target client's notification loop (see MsgflowClient.notifications). */
export type InterceptedApi = InstanceApi & Pick<MsgflowClient, 'notifications'>;

type Target = InstanceApi | (() => InstanceApi | Promise<InstanceApi>);
type Method = (request: unknown, options?: CallOptions) => Promise<unknown>;

/**
 * Builds an InstanceApi whose every method goes through `interceptors`, in
 * order (the first sees the call first; those whose `appliesTo` leaves the
 * method out are not in its chain), then to `target`. A getter target
 * is asked on each call (it caches its client): the engine asks for a client
 * synchronously, but opening the local service is asynchronous and happens
 * only for instances a run really uses. A getter may give its client itself
 * once it has one: the call then goes on without an await. `notifications()`
 * is the target's own loop, not intercepted.
 */
export function interceptApi(target: Target, interceptors: readonly ApiInterceptor[]): InterceptedApi {
  const getter = typeof target === 'function' ? target : () => target;
  // A client at hand is called directly: no await per call for one it would not have to wait for.
  const invoke = (c: ApiCall): Promise<unknown> => {
    try {
      const api = getter();
      if (!(api instanceof Promise)) return (api as unknown as Record<ApiMethod, Method>)[c.method](c.request, c.options);
      return api.then((a) => (a as unknown as Record<ApiMethod, Method>)[c.method](c.request, c.options));
    } catch (e) {
      return Promise.reject(e);
    }
  };
  const down = (chain: readonly ApiInterceptor[], i: number, c: ApiCall): Promise<unknown> => {
    const interceptor = chain[i];
    return interceptor ? interceptor.call(c, () => down(chain, i + 1, c)) : invoke(c);
  };
  const api: Record<string, unknown> = {};
  for (const method of API_METHODS) {
    const spec = METHOD_SPECS[method];
    const chain = interceptors.filter((i) => i.appliesTo?.(method, spec) ?? true);
    api[method] = (request: unknown, options: CallOptions = {}) => down(chain, 0, { method, spec, request, options });
  }
  api.notifications = (o?: NotificationsOptions) => notificationsOf(async () => getter(), o);
  return api as unknown as InterceptedApi;
}

/** The target client's own notification loop (every client createClient builds has one). */
async function* notificationsOf(resolve: () => Promise<InstanceApi>, o?: NotificationsOptions): ReturnType<MsgflowClient['notifications']> {
  const client = (await resolve()) as Partial<MsgflowClient>;
  if (typeof client.notifications !== 'function') throw new TypeError('this instance client has no notifications() loop');
  yield* client.notifications(o);
}
