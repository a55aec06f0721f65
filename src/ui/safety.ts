/**
 * The dashboard's safety rules: where it may listen, who may change state,
 * and which requests a browser on another site must not be able to make.
 */
import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { MsgflowError } from '../api/errors.js';
import { bearerMatches } from '../util/bearer.js';

/** True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/**
 * Refuses a bind that would let anyone on the network start or cancel runs:
 * a non-loopback address needs a token.
 */
export function checkBind(host: string, token: string): void {
  if (!isLoopbackHost(host) && token === '') throw new MsgflowError('UI_UNSAFE_BIND', { host });
}

/** Constant-time check of `Authorization: Bearer <token>`; always true when no token is configured. */
export function hasToken(req: IncomingMessage, token: string): boolean {
  return token === '' || bearerMatches(req.headers.authorization, token);
}

/**
 * Cross-site protection for state-changing requests. A page on another site
 * can POST a form or a `no-cors` fetch to 127.0.0.1 without any token; it can
 * send neither a JSON content type without a CORS preflight (which this server
 * never grants) nor a same-origin Origin header. Returns the reason to refuse,
 * or undefined.
 */
export function crossSiteReason(req: IncomingMessage): string | undefined {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') return `Content-Type must be application/json, got '${type || 'none'}'`;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    let originHost: string;
    try {
      originHost = new URL(origin).host;
    } catch {
      return `Origin '${origin}' is not a URL`;
    }
    if (originHost !== req.headers.host) return `Origin ${origin} is not this dashboard (${req.headers.host ?? 'no Host'})`;
  }
  return undefined;
}

/**
 * DNS-rebinding protection: a dashboard bound to loopback answers only
 * requests addressed to a loopback name, so a hostile domain that resolves to
 * 127.0.0.1 cannot read its pages.
 */
export function hostHeaderAllowed(req: IncomingMessage, boundHost: string): boolean {
  if (!isLoopbackHost(boundHost)) return true;
  const host = req.headers.host;
  if (!host) return true;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!;
  return isLoopbackHost(name);
}
