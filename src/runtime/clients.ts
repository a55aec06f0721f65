import { MsgflowError } from '../api/errors.js';
import type { InstanceApi } from '../api/types.js';
import type { EngineEvents } from '../engine/events.js';
import { createClient } from '../client/client.js';
import { interceptApi, type ApiCall, type ApiInterceptor } from '../client/interceptors.js';
import { localInstanceOf, type Config } from '../config/load.js';
import type { Logger } from '../engine/action.js';
import { createInProcessTransport } from './in-process-transport.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { LocalHost } from './local-host.js';

/**
 * Resolves an instance name from config.yaml to a client. Every path goes
 * through createClient, so validation, rate limiting, retries and typed errors
 * are the same whether the instance is remote, the local service in this
 * process, or the local service owned by another msgflow process.
 */
export function createClientResolver(
  config: Config,
  getLocal: () => Promise<LocalHost>,
  opts: {
    clock?: Clock;
    logger?: Logger;
    onCall?: (e: ApiCallEvent) => void;
    /** Whether `onCall` has anyone to tell now (a call nobody hears of is not timed). @default always */
    heard?: () => boolean;
  } = {},
): (name: string) => Promise<InstanceApi> {
  const cache = new Map<string, Promise<InstanceApi>>();
  const onCall = opts.onCall;
  const build = async (name: string): Promise<InstanceApi> => {
    const client = await buildClient(name);
    return onCall ? interceptApi(client, [callMetrics(name, onCall, opts.clock ?? systemClock, opts.heard)]) : client;
  };
  const buildClient = async (name: string): Promise<InstanceApi> => {
    const inst = config.instances[name];
    if (!inst) {
      const known = Object.keys(config.instances);
      throw new MsgflowError('INSTANCE_UNKNOWN', { name, file: config.file, known: ` (instances: ${known.join(', ') || 'none'})` });
    }
    const common = {
      timeoutMs: inst.timeoutMs,
      retries: inst.retries,
      rateLimits: inst.rateLimits,
      rateLimit: inst.rateLimit,
      clock: opts.clock,
      logger: opts.logger,
      // A refused first call names the instance as config.yaml does.
      name,
    };
    if (inst.apiUrl !== 'local') {
      return createClient({ ...common, apiUrl: inst.apiUrl, idInstance: inst.idInstance!, apiTokenInstance: inst.apiTokenInstance! });
    }
    const target = localTarget(config, inst);
    if (!target) throw new MsgflowError('USAGE', { reason: `instance '${name}': no matching local instance` });
    // The client paces a local instance by that instance's own limits (0 =
    // unlimited), not the published ones; limits set on the client win.
    const local = { ...common, rateLimits: { ...target.rateLimits, ...inst.rateLimits } };
    const host = await getLocal();
    const idInstance = target.idInstance;
    const apiTokenInstance = inst.apiTokenInstance ?? target.apiTokenInstance;
    if (host.mode === 'remote') return createClient({ ...local, apiUrl: host.url, idInstance, apiTokenInstance });
    return createClient({
      ...local,
      apiUrl: host.url ?? 'http://local.invalid',
      idInstance,
      apiTokenInstance,
      transport: createInProcessTransport(host.service, idInstance, apiTokenInstance),
    });
  };
  const resolveName = (name: string): Promise<InstanceApi> => {
    let p = cache.get(name);
    if (!p) {
      p = build(name);
      cache.set(name, p);
      p.catch(() => cache.delete(name));
    }
    return p;
  };
  return resolveName;
}

/** What the bus's `api:call` carries (src/engine/events.ts). */
export type ApiCallEvent = EngineEvents['api:call'][0];

/**
 * The metrics interceptor: every call reported to `onCall` once it settles
 * (after the client's own retries): the instance's config name, the method,
 * 'ok' or the error's catalogue code, and the time it took. Never the id or
 * the token. A call made while `heard()` says nobody listens goes straight
 * on, untimed (a bulk job in a process without metrics or a debug log makes
 * a million).
 */
export function callMetrics(
  instance: string,
  onCall: (e: ApiCallEvent) => void,
  clock: Clock,
  heard: () => boolean = () => true,
): ApiInterceptor {
  return {
    name: 'metrics',
    call(c, next) {
      return heard() ? timed(c, next) : next();
    },
  };

  async function timed(c: ApiCall, next: () => Promise<unknown>): Promise<unknown> {
    const started = clock.now();
    let outcome = 'ok';
    try {
      return await next();
    } catch (e) {
      const code = (e as { code?: unknown } | undefined)?.code;
      outcome = typeof code === 'string' ? code : c.options.signal?.aborted ? 'ABORTED' : 'UNKNOWN';
      throw e;
    } finally {
      onCall({ instance, method: c.method, outcome, durationMs: clock.now() - started });
    }
  }
}

/** Defined with the config it follows from; here too for the runtime's modules that resolve clients and identities together. */
export { identityOf } from '../config/identity.js';

/** The local instance an `apiUrl: local` entry of config.yaml means: its idInstance, or the first one. */
export function localTarget(config: Config, inst: Config['instances'][string]) {
  return localInstanceOf(config, inst);
}
