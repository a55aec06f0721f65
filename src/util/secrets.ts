import { redact, type Secrets } from '../api/redact.js';

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

  /** Hides `s` from now on (a value too short to be a secret is ignored, see MIN_SECRET_LENGTH). */
  add(s: Secrets): void {
    if (s.apiTokenInstance || s.idInstance) this.secrets.push(s);
  }

  /** `text` with every secret added so far replaced by its placeholder. Bound: may be passed as a function. */
  readonly scrub = (text: string): string => {
    let out = text;
    for (const s of this.secrets) out = redact(out, s);
    return out;
  };
}
