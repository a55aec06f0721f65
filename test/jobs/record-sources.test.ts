/**
 * Where a bulk job reads its records: a `with:` block naming none of them
 * (a file, inline items, or the job's own lists) fails the step before any
 * call, naming the fields it could have given.
 */
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { project, remoteConfig } from '../support/project.js';

const CASES = [
  ['contacts.import', '{ mode: upsert }', 'give file or items'],
  ['checkAccount.bulk', '{ pause: 1s }', 'give at least one of file, items, numbers, usernames'],
  ['files.broadcast', '{ urlFile: "http://127.0.0.1:9/a.pdf", fileName: a.pdf }', 'give file or recipients'],
  ['messages.broadcast', '{ message: { text: hi } }', 'give file or recipients'],
] as const;

describe('a bulk job without records', () => {
  it.each(CASES)('%s with %s fails its step: "%s"', async (uses, withBlock, says) => {
    const dir = project({
      'config.yaml': remoteConfig('record-sources-token-1'),
      'flows/job.yaml': `name: job\nsteps:\n  - id: bulk\n    uses: ${uses}\n    with: ${withBlock}\n`,
    });
    const r = await cli(['run', 'job'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr + r.stdout).toContain(`step 'bulk': with: ${says}`);
  });
});
