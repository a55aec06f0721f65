/**
 * The request of a method that carries a file (METHOD_SPECS requestBody
 * `multipart` or `binary`), read into the object the shared validator takes:
 * the bytes as `file`, the text fields as they are.
 *
 * - multipart/form-data, as the official client sends both sendFileByUpload
 *   and uploadFile: a `file` part and text fields (`chatId`, `fileName`,
 *   `caption`, `quotedMessageId`).
 * - uploadFile also as the service documents it: the file itself as the
 *   body, its type in Content-Type and its name in `GA-Filename`.
 *
 * A file part's own name (`blob` for a nameless Blob) and a generic
 * Content-Type are what a client sends when it knows nothing: they count as
 * absent, so the extension of `fileName`, else the bytes, decide the type.
 */
import { ValidationError } from '../api/errors.js';
import type { LocalRequest } from './types.js';

const NAMELESS = new Set(['', 'blob', 'file']);
const GENERIC_TYPES = new Set(['', 'application/octet-stream']);

function header(req: LocalRequest, name: string): string | undefined {
  const v = req.headers?.[name];
  return Array.isArray(v) ? v[0] : v;
}

/** GA-Filename as sent: percent-encoded when the name is not ASCII (the client's encodeUpload). */
function gaFilename(req: LocalRequest): string | undefined {
  const raw = header(req, 'ga-filename')?.trim();
  if (!raw) return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function bytesOf(body: LocalRequest['body']): Buffer {
  if (body === undefined) return Buffer.alloc(0);
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
}

/**
 * The request object of an upload method.
 * @throws ValidationError naming what is wrong with the body
 */
export async function readUploadBody(req: LocalRequest, kind: 'multipart' | 'binary'): Promise<Record<string, unknown>> {
  const contentType = header(req, 'content-type') ?? '';
  const multipart = /^multipart\/form-data\s*;/i.test(contentType);
  if (multipart) return readMultipart(req, contentType, kind);
  if (kind === 'multipart') {
    throw new ValidationError("the request must be multipart/form-data with a 'file' part", 'file');
  }
  const data = bytesOf(req.body);
  const out: Record<string, unknown> = {};
  const name = gaFilename(req);
  // No body is no file; a named one without bytes is an empty file (refused as such).
  if (data.length > 0 || name !== undefined) out.file = data;
  if (name !== undefined) out.fileName = name;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (!GENERIC_TYPES.has(type)) out.mimeType = type;
  return out;
}

async function readMultipart(req: LocalRequest, contentType: string, kind: 'multipart' | 'binary'): Promise<Record<string, unknown>> {
  let form: FormData;
  try {
    // The platform's multipart parser (undici's, behind Response.formData()).
    form = await new Response(bytesOf(req.body) as Uint8Array<ArrayBuffer>, { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw new ValidationError('the body is not valid multipart/form-data');
  }
  const out: Record<string, unknown> = {};
  let part: File | undefined;
  for (const [name, value] of form) {
    if (typeof value === 'string') {
      if (!(name in out)) out[name] = value;
    } else if (name === 'file' && !part) part = value;
  }
  if (part) {
    out.file = Buffer.from(await part.arrayBuffer());
    const partName = NAMELESS.has(part.name) ? undefined : part.name;
    // uploadFile names the file in GA-Filename; sendFileByUpload in its fileName field.
    const named = kind === 'binary' ? gaFilename(req) : (out.fileName as string | undefined);
    if (named === undefined && partName !== undefined) out.fileName = partName;
    else if (named !== undefined) out.fileName = named;
    if (kind === 'binary' && !GENERIC_TYPES.has(part.type.toLowerCase())) out.mimeType = part.type.toLowerCase();
  }
  return out;
}
