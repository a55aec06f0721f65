import { MIN_SECRET_LENGTH, redact, type Secrets } from '../api/redact.js';

/**
 * What one runtime (or one CLI invocation) hides in the text it prints, logs
 * or answers: the tokens and instance ids it was given, written as
 * <API_TOKEN> / <INSTANCE_ID> even when they slipped into a message (e.g.
 * echoed by a remote service). Owned by whoever builds the runtime and
 * passed to where text leaves the process, so two runtimes in one process
 * each hide their own secrets and neither learns the other's.
 *
 * @example
 * const redactor = new Redactor();
 * redactor.add({ idInstance: '1101000001', apiTokenInstance: 'token-aaaa-1111' });
 * redactor.scrub('GET /waInstance1101000001/getSettings/token-aaaa-1111'); // 'GET /waInstance<INSTANCE_ID>/getSettings/<API_TOKEN>'
 */
export class Redactor {
  private readonly secrets: Secrets[] = [];
  /** `${{ secrets.NAME }}` values -> their placeholder `<SECRET:NAME>`. */
  private readonly values = new Map<string, string>();

  /** Hides `s` from now on (a value too short to be a secret is ignored, see MIN_SECRET_LENGTH). */
  add(s: Secrets): void {
    if (s.apiTokenInstance || s.idInstance) this.secrets.push(s);
  }

  /**
   * Hides a flow secret's value (`${{ secrets.NAME }}`) from now on, written
   * `<SECRET:NAME>`, URL-encoded and JSON-escaped forms included (a value too
   * short to be a secret is ignored, see MIN_SECRET_LENGTH).
   */
  addSecret(name: string, value: string): void {
    if (value.length < MIN_SECRET_LENGTH) return;
    const placeholder = `<SECRET:${name}>`;
    for (const form of new Set([value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)])) this.values.set(form, placeholder);
  }

  /** `text` with every secret added so far replaced by its placeholder. Bound: may be passed as a function. */
  readonly scrub = (text: string): string => {
    let out = text;
    for (const s of this.secrets) out = redact(out, s);
    // Longest first: a value that contains another is replaced whole.
    for (const [v, placeholder] of [...this.values].sort((a, b) => b[0].length - a[0].length)) out = out.split(v).join(placeholder);
    return out;
  };

  /** `value` with every string inside it scrubbed (objects and arrays copied): for what is stored or answered as data. */
  scrubValue<T>(value: T): T {
    if (this.values.size === 0) return value;
    if (typeof value === 'string') return this.scrub(value) as T;
    if (Array.isArray(value)) return value.map((v) => this.scrubValue(v)) as T;
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.scrubValue(v)])) as T;
    }
    return value;
  }
}
