/**
 * Request bodies of every HTTP server of msgflow (the local service, the
 * dashboard, the webhook receiver): one reader with a size bound, one answer
 * for a body too large (413, written before the connection closes, also to a
 * client that asked `Expect: 100-continue`), and one depth check for the JSON
 * they parse.
 */
import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';

/**
 * The deepest nesting of arrays and objects a JSON body may have. A
 * notification nests 4 levels, a flow input a few more; a body nested
 * thousands deep would overflow the stack of whatever walks it later
 * (hashing, serialising), so it is refused where it is read.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `value` nests arrays and objects more than `max` levels deep (a
 * scalar is 0 levels, `[]` and `{}` are 1, `[[1]]` is 2). Iterative, so a
 * value nested 100,000 deep is answered rather than overflowing the stack.
 */
export function nestedDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<{ v: object; depth: number }> = [];
  if (value !== null && typeof value === 'object') stack.push({ v: value, depth: 1 });
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push({ v: child as object, depth: depth + 1 });
    }
  }
  return false;
}

/** The reason a too-deep body is refused, for every reader's error answer. */
export function tooDeepReason(max: number = MAX_JSON_DEPTH): string {
  return `nested more than ${max} levels deep, the most a request body may be`;
}

/** The declared Content-Length, when there is a valid one. */
function declaredLength(req: IncomingMessage): number | undefined {
  const n = Number(req.headers['content-length']);
  return req.headers['content-length'] !== undefined && Number.isFinite(n) ? n : undefined;
}

/**
 * The body of `req`, or 'too-large' as soon as it passes `max` bytes (at once
 * when its Content-Length says so). Reading then stops; the caller answers
 * with {@link refuseBody}, which reads and drops the rest.
 */
export function readBodyLimited(req: IncomingMessage, max: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => readBody(req, max, (e, body) => (e ? reject(e) : resolve(body!))));
}

/**
 * {@link readBodyLimited} with a callback, called once: for a server's hot
 * path, which then makes no promise of its own per request.
 */
export function readBody(req: IncomingMessage, max: number, done: (e: Error | undefined, body?: Buffer | 'too-large') => void): void {
  if ((declaredLength(req) ?? 0) > max) return done(undefined, 'too-large');
  // A small body comes in one chunk: kept as it is, no array and no copy.
  let first: Buffer | undefined;
  let more: Buffer[] | undefined;
  let size = 0;
  let finished = false;
  const onData = (c: Buffer) => {
    size += c.length;
    if (size > max) {
      finished = true;
      req.off('data', onData);
      done(undefined, 'too-large');
      return;
    }
    if (first === undefined) first = c;
    else (more ??= [first]).push(c);
  };
  req.on('data', onData);
  req.on('end', () => {
    if (finished) return;
    finished = true;
    done(undefined, more !== undefined ? Buffer.concat(more) : (first ?? EMPTY));
  });
  req.on('error', (e) => {
    if (finished) return;
    finished = true;
    done(e);
  });
}

const EMPTY = Buffer.alloc(0);

/**
 * Answers a body the server will not read (413) and closes the connection
 * once the answer is written, not before: what the client still sends is
 * read and dropped meanwhile, so it sees the answer rather than a reset.
 */
export function refuseBody(req: IncomingMessage, res: ServerResponse, status: number, headers: OutgoingHttpHeaders, text: string): void {
  // The rest of the body is never parsed: read and dropped until the socket goes.
  req.resume();
  res.writeHead(status, { ...headers, connection: 'close', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * `Expect: 100-continue`: the client waits for `100 Continue` before sending
 * its body. A body declared larger than `max` (or what `max(req)` gives for
 * that request) is answered at once (with
 * `refuse`, a 413) and never invited; any other gets its `100 Continue` and
 * goes to the server's request handler as usual.
 */
export function guardExpectContinue(
  server: Server,
  max: number | ((req: IncomingMessage) => number),
  refuse: (req: IncomingMessage, res: ServerResponse) => void,
): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if ((declaredLength(req) ?? 0) > (typeof max === 'number' ? max : max(req))) return refuse(req, res);
    res.writeContinue();
    server.emit('request', req, res);
  });
}
