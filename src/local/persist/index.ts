/** Storage primitives of the local service (lowdb based). */
export { AppendLog } from './append-log.js';
export { openJsonDoc } from './json-doc.js';
