/**
 * The daemon's stream of one flow's engine events (`GET /api/events?flow=NAME`,
 * src/ui/follow.ts): each is `event: bus` with `data: { name, event }`.
 */
import { request, type IncomingMessage } from 'node:http';
import { MsgflowError } from '../../api/errors.js';
import type { FollowedEvent } from './types.js';

export const unreachable = (url: string, reason: string) => new MsgflowError('DAEMON_API_UNREACHABLE', { url, reason });

interface SseEvent {
  event: string;
  data: string;
}

/** Parses server-sent events out of a response as they arrive. */
function onSse(res: IncomingMessage, each: (e: SseEvent) => void): void {
  let buf = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) each({ event, data: data.join('\n') });
    }
  });
}

/** An open event stream of one flow. */
export interface FlowEventStream {
  /** Called once when the stream ends (the daemon stopped, or dropped a follower too far behind). */
  onClose(fn: () => void): void;
  close(): void;
}

/**
 * Opens `flow`'s event stream; resolves once the daemon has subscribed it
 * (its first bytes), so that a run started after it misses none of its events.
 */
export function openFlowEvents(url: string, flow: string, each: (e: FollowedEvent) => void): Promise<FlowEventStream> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/events?flow=${encodeURIComponent(flow)}`, { headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(unreachable(url, `GET /api/events answered ${res.statusCode}`));
      }
      onSse(res, (e) => {
        if (e.event === 'bus') each(JSON.parse(e.data) as FollowedEvent);
      });
      res.once('data', () =>
        resolve({
          onClose: (fn) => res.once('close', fn),
          close: () => res.destroy(),
        }),
      );
    });
    req.on('error', (e: NodeJS.ErrnoException) => reject(unreachable(url, e.code ?? e.message)));
    req.end();
  });
}
