/**
 * Requests node's HTTP parser cannot read (an unknown method, a bad
 * Content-Length, a raw non-ASCII byte in the path, headers too large): the
 * service's JSON error shape with the reason, rather than node's empty 400.
 * A request that was read before the broken one (pipelining) is answered
 * first: the error waits for the answers in flight on that connection.
 */
import http, { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { MsgflowError } from '../api/errors.js';

/** A parser error's answer: status and reason. */
type Reason = readonly [status: number, reason: string];

const CONTENT_LENGTH: Reason = [400, 'invalid Content-Length header (one decimal number, with no Transfer-Encoding)'];
const HEADER_LINE: Reason = [400, 'malformed header line'];
const CHUNKED: Reason = [400, 'malformed chunked body'];

/** Status and reason of a parser error, by node's code (llhttp's HPE_*, or node's own). */
const PARSER_ERRORS: Readonly<Record<string, Reason>> = {
  HPE_INVALID_METHOD: [400, 'unknown HTTP method'],
  HPE_INVALID_CONTENT_LENGTH: CONTENT_LENGTH,
  HPE_UNEXPECTED_CONTENT_LENGTH: CONTENT_LENGTH,
  HPE_INVALID_URL: [400, 'invalid request target: a space, control or non-ASCII byte (percent-encode it)'],
  HPE_INVALID_VERSION: [400, 'invalid HTTP version'],
  HPE_INVALID_HEADER_TOKEN: HEADER_LINE,
  HPE_INVALID_EOF_STATE: HEADER_LINE,
  HPE_LF_EXPECTED: HEADER_LINE,
  HPE_CR_EXPECTED: HEADER_LINE,
  HPE_INVALID_TRANSFER_ENCODING: CHUNKED,
  HPE_INVALID_CHUNK_SIZE: CHUNKED,
  HPE_HEADER_OVERFLOW: [431, 'request headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request did not arrive in time'],
};

function describe(code: string | undefined): Reason {
  const known = code !== undefined && Object.hasOwn(PARSER_ERRORS, code) ? PARSER_ERRORS[code] : undefined;
  return known ?? [400, `malformed request${code ? ` (${code})` : ''}`];
}

/** The raw answer: a full HTTP/1.1 response that closes the connection. */
function answerText(err: NodeJS.ErrnoException): string {
  const [status, reason] = describe(err.code);
  const body = JSON.stringify({ message: new MsgflowError('MALFORMED_REQUEST', { reason }).message });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  );
}

/**
 * The response node is writing on a connection, when there is one: node
 * attaches each response to its socket in request order
 * (`socket._httpMessage`, set while a response is unfinished and handed to
 * the next pipelined one when it finishes), so a socket without one owes no
 * answer. Read only when a request could not be parsed: nothing is kept per
 * request.
 */
function answerInProgress(socket: Socket): http.ServerResponse | undefined {
  const res = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
  return res ?? undefined;
}

/**
 * Answers the requests node cannot parse on `server` with the service's JSON
 * error shape (`{"message": "malformed request: ..."}`), once the requests
 * read before on the same connection are answered (node writes them in
 * order; the error waits for the last one's `close`).
 */
export function answerClientErrors(server: http.Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // The client is gone: nobody to answer.
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const answer = (): void => {
      if (!socket.writable) return void socket.destroy();
      const owed = answerInProgress(socket);
      // Pipelined: the requests before the broken one are answered first.
      if (owed !== undefined) owed.once('close', answer);
      else socket.end(answerText(err));
    };
    answer();
  });
}
