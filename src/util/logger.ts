/**
 * The logging contract every layer writes to. It lives in `util` because the
 * client, the local service, the store and the engine all log, and a lower
 * layer must not import the engine to name the type.
 */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}
