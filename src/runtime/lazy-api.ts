import { API_METHODS } from '../api/methods.js';
import type { InstanceApi } from '../api/types.js';
import type { MsgflowClient, NotificationsOptions } from '../client/client.js';

/** The instance's methods plus the client's notification iterator (see MsgflowClient.notifications). */
export type LazyApi = InstanceApi & Pick<MsgflowClient, 'notifications'>;

/**
 * An InstanceApi whose client is built on first use: the engine asks for a
 * client synchronously, but opening the local service (or checking who owns
 * it) is asynchronous and should only happen for instances a run really uses.
 */
export function lazyApi(get: () => Promise<InstanceApi>): LazyApi {
  const api = {} as Record<string, unknown>;
  for (const m of API_METHODS) {
    api[m] = async (request: unknown, options: unknown) => {
      const client = (await get()) as unknown as Record<string, (r: unknown, o: unknown) => Promise<unknown>>;
      return client[m]!(request, options);
    };
  }
  api.notifications = (o?: NotificationsOptions) => notificationsOf(get, o);
  return api as unknown as LazyApi;
}

/** The built client's own notification loop (every client createClient builds has one). */
async function* notificationsOf(get: () => Promise<InstanceApi>, o?: NotificationsOptions): ReturnType<MsgflowClient['notifications']> {
  const client = (await get()) as unknown as MsgflowClient;
  yield* client.notifications(o);
}
