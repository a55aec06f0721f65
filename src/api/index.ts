/** The API contract: methods, types, validators and the error catalogue, shared by client and local service. */
export * from './methods.js';
export * from './chat-id.js';
export * from './error-codes.js';
export * from './errors.js';
export * from './redact.js';
export * from './schemas.js';
export * from './types.js';
export * from './notifications.js';
export * from './validate.js';
export * from './failure.js';
