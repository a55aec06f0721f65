/**
 * The webhook receiver of `msgflow start` (config.yaml `webhook:`): the
 * service POSTs each notification with `Authorization: Bearer
 * <webhookUrlToken>`. A request without the right token gets 401; the answer
 * is 2xx only once the notification is durably recorded (its runs decided),
 * so a crash before that makes the service deliver it again, and a
 * notification delivered twice starts nothing twice (see the dispatcher).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WebhookConfig } from '../../config/schema.js';
import { parseNotification, type Notification } from '../../engine/notify/body.js';
import type { Logger } from '../../engine/action.js';
import { bearerMatches } from '../../util/bearer.js';
import { guardExpectContinue, nestedDeeperThan, readBodyLimited, refuseBody, tooDeepReason } from '../../util/http-body.js';
import { portInUseError } from '../../util/port-in-use.js';

/** A notification is small; anything bigger is not one. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface WebhookReceiverOptions {
  config: WebhookConfig;
  /**
   * The config name of the instance a notification belongs to (by its
   * `instanceData.idInstance`), or undefined when no instance of this
   * process consumes it by webhook.
   */
  instanceOf(n: Notification): string | undefined;
  /** Records the notification durably; rejects when it could not be. */
  handle(instance: string, n: Notification): Promise<unknown>;
  logger: Logger;
}

export interface WebhookReceiver {
  /** `http://host:port/path`. */
  readonly url: string;
  close(): Promise<void>;
}

function answer(res: ServerResponse, status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

/** 413, written before the connection closes (a notification is never that big). */
function refuseLarge(req: IncomingMessage, res: ServerResponse): void {
  const text = JSON.stringify({ error: `a notification is at most ${MAX_BODY_BYTES} bytes` });
  refuseBody(req, res, 413, { 'content-type': 'application/json; charset=utf-8' }, text);
}

async function serve(o: WebhookReceiverOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== o.config.path) return answer(res, 404, { error: `not found: notifications are received on ${o.config.path}` });
  if (req.method !== 'POST') return answer(res, 405, { error: 'use POST' }, { allow: 'POST' });
  if (!bearerMatches(req.headers.authorization, o.config.token)) {
    return answer(
      res,
      401,
      { error: 'missing or wrong token: send Authorization: Bearer <webhook.token>' },
      { 'www-authenticate': 'Bearer' },
    );
  }
  const raw = await readBodyLimited(req, MAX_BODY_BYTES);
  if (raw === 'too-large') return refuseLarge(req, res);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return answer(res, 400, { error: 'the body is not JSON' });
  }
  // A 4xx, not "deliver it again": delivered again, it would be refused again, forever.
  if (nestedDeeperThan(body)) return answer(res, 400, { error: `not a notification: the body is ${tooDeepReason()}` });
  // Parsed once here: from now on the notification's fields are read typed.
  const n = parseNotification(body);
  if (!n) return answer(res, 400, { error: 'not a notification: typeWebhook is missing' });
  const instance = o.instanceOf(n);
  if (instance === undefined) return answer(res, 404, { error: 'no instance of this msgflow receives its notifications by webhook' });
  try {
    await o.handle(instance, n);
  } catch (e) {
    // Not recorded: the service must deliver it again.
    o.logger.error(`webhook notification of ${instance} not recorded: ${e instanceof Error ? e.message : String(e)}`);
    return answer(res, 503, { error: 'not recorded; deliver it again' }, { 'retry-after': '5' });
  }
  answer(res, 200, { ok: true });
}

/** Starts listening; PORT_IN_USE when the port is taken. */
export async function startWebhookReceiver(o: WebhookReceiverOptions): Promise<WebhookReceiver> {
  const server: Server = createServer((req, res) => {
    serve(o, req, res).catch((e: unknown) => {
      if (!res.headersSent) answer(res, 500, { error: e instanceof Error ? e.message : String(e) });
      else res.destroy();
    });
  });
  guardExpectContinue(server, MAX_BODY_BYTES, refuseLarge);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(portInUseError(e, { port: o.config.port, key: 'webhook.port' }) ?? e));
    server.listen(o.config.port, o.config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = o.config.host.includes(':') ? `[${o.config.host}]` : o.config.host;
  return {
    url: `http://${host}:${port}${o.config.path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
