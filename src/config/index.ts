/** config.yaml: schema, loader, env interpolation. */
export * from './schema.js';
export * from '../local/config.js';
export * from './load.js';
export * from './interpolate.js';
