/**
 * Node's `listen EADDRINUSE: address already in use :::7070` (with a stack)
 * as one line a user can act on: which port, and which setting moves it.
 */
import { MsgflowError } from '../api/errors.js';

/**
 * The PORT_IN_USE error for a listen error, or undefined when `e` is not one.
 * Call it where a port is opened (the local service) or where such an error
 * is reported (the CLI).
 *
 * @example
 * try { await service.listen(port) } catch (e) { throw portInUseError(e, { port, key: 'local.port' }) ?? e }
 */
export function portInUseError(e: unknown, where: { port?: number; key?: string } = {}): MsgflowError | undefined {
  const err = e as NodeJS.ErrnoException & { port?: number; address?: string };
  if (!err || typeof err !== 'object' || err.code !== 'EADDRINUSE') return undefined;
  const port = where.port ?? err.port ?? '?';
  const host = err.address && err.address !== '::' && err.address !== '0.0.0.0' ? ` on ${err.address}` : '';
  return new MsgflowError('PORT_IN_USE', { port, host, key: where.key ?? 'local.port in config.yaml' }, { cause: e });
}
