/**
 * A writing item's intent on a BullMQ worker (see item-host.ts): claimed
 * once, as its first writing call leaves (the client's `beforeSend`: after
 * its rate limiter, just before the transport sends), or before a plugin's
 * run. When the claim finds the item taken (another worker's intent, a
 * result recorded meanwhile), the call is not made and {@link WriteIntent.outcome}
 * says what the job comes to.
 */
import { FlowError } from '../../api/errors.js';
import type { ApiInterceptor } from '../../client/interceptors.js';
import { DefiniteError } from '../../engine/control.js';
import type { ItemJobResult } from './item-host.js';

/** A writing call about to leave: what the take-over of a dead worker's intent looks for at the service. */
export interface WriteCall {
  method: string;
  request: unknown;
}

export class WriteIntent {
  /** The intent's token, once held. */
  token: string | undefined;
  /** A writing call left through the client. */
  sent = false;
  /** What the job comes to instead of calling: a recorded result, or an error (ITEM_TAKEN_OVER). */
  instead: { result: ItemJobResult } | { error: unknown } | undefined;

  /** `claim`: takes the intent, resolving its token, or what the job comes to when the item is taken. */
  constructor(private readonly claim: (call?: WriteCall) => Promise<string | ItemJobResult>) {}

  /** Before a plugin's run: undefined once held, else what the job comes to. */
  async takeEarly(): Promise<ItemJobResult | undefined> {
    const r = await this.claim();
    if (typeof r !== 'string') return r;
    this.token = r;
    return undefined;
  }

  /** As a writing call leaves: holds the intent, or refuses the call (the item is someone else's). */
  async leave(call: WriteCall): Promise<void> {
    if (this.instead) throw notHere();
    if (this.token === undefined) {
      let r: string | ItemJobResult;
      try {
        r = await this.claim(call);
      } catch (e) {
        if (!(e instanceof FlowError && e.code === 'ITEM_TAKEN_OVER')) throw e;
        this.instead = { error: e };
        throw notHere();
      }
      if (typeof r !== 'string') {
        this.instead = { result: r };
        throw notHere();
      }
      this.token = r;
    }
    this.sent = true;
  }

  /** The job's answer once `instead` is set. */
  outcome(): ItemJobResult {
    const i = this.instead!;
    if ('error' in i) throw i.error;
    return i.result;
  }
}

/** The call is not made and must not be tried again here: the item is recorded, or held, elsewhere ({@link WriteIntent.outcome}). */
function notHere(): DefiniteError {
  return new DefiniteError('the item was taken over or recorded elsewhere; this worker does not call');
}

/** The item's writing calls take its intent as they leave (CallOptions.beforeSend, after any the caller gave). */
export function writeIntentInterceptor(intent: WriteIntent): ApiInterceptor {
  return {
    name: 'write-intent',
    appliesTo: (_method, spec) => spec.writes,
    call(c, next) {
      const before = c.options.beforeSend;
      const { method, request } = c;
      c.options = { ...c.options, beforeSend: async () => (await before?.(), await intent.leave({ method, request })) };
      return next();
    },
  };
}
