export * from './body.js';
export * from './match.js';
export * from './records.js';
export * from './dispatcher.js';
