/**
 * Reading a request body with a size bound: one reader for every HTTP server
 * of msgflow (the local service, the dashboard, the webhook receiver).
 */
import type { IncomingMessage } from 'node:http';

/**
 * The body of `req`, or 'too-large' as soon as it passes `max` bytes. Reading
 * then stops (the rest is not buffered); what happens to the connection is the
 * caller's choice: answer 413 and close, or destroy it.
 */
export function readBodyLimited(req: IncomingMessage, max: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > max) {
        done = true;
        req.off('data', onData);
        resolve('too-large');
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.on('end', () => {
      if (!done) resolve(Buffer.concat(chunks));
    });
    req.on('error', (e) => {
      if (!done) reject(e);
    });
  });
}
