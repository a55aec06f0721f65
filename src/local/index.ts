/**
 * The local service: msgflow's own implementation of the instance API, over
 * HTTP (`msgflow serve`) and in-process (`apiUrl: local`). See docs/local-service.md.
 */
export { createLocalService, type LocalService, type LocalServiceOptions, type LocalServiceEvents } from './service.js';
export { listenHttp, type HttpListener, type ListenOptions } from './http-server.js';
export { parseSeed, loadSeedFile } from './seed.js';
export { MessageInputSchema, type MessageInput } from './message-input.js';
export { Network } from './network.js';
export type { LocalRequest, LocalResponse, LocalFileBody } from './types.js';
export type { QueueEntry, FailedEntry } from './instance/send-queue.js';
