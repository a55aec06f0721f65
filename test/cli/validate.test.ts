/**
 * `msgflow validate` as a user types it, in-process: the files a shell glob
 * gives, literal file paths in `with:`, and config.yaml's cross-section rules.
 */
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const GREET_FLOW = `name: greet
instance: default
steps:
  - id: hello
    uses: log
    with: { message: hello }
`;

const GREET_TEST = `cases:
  - name: says hello
    flow: greet
    expect:
      status: succeeded
`;

describe('validate: flow tests next to the flows', () => {
  it('a *.test.yaml named on the command line (as flows/*.yaml expands) is validated as a flow test, not as a flow', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG, 'flows/greet.yaml': GREET_FLOW, 'flows/greet.test.yml': GREET_TEST });
    const r = await cli(['validate', 'flows/greet.test.yml', 'flows/greet.yaml'], dir);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('ok  flows/greet.test.yml');
    expect(r.stdout).toContain('ok  flows/greet.yaml');
    expect(r.code).toBe(0);
  });

  it('a directory is validated with its flow tests, and a broken test names file:line:col and key path', async () => {
    const dir = project({
      'config.yaml': LOCAL_CONFIG,
      'flows/greet.yaml': GREET_FLOW,
      'flows/greet.test.yaml': GREET_TEST,
      'flows/broken.test.yaml': 'cases:\n  - name: typo\n    flow: greet\n    expct: { status: succeeded }\n',
    });
    for (const args of [['validate'], ['validate', 'flows']]) {
      const r = await cli(args, dir);
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('ok  flows/greet.test.yaml');
      expect(r.stderr.trim().split('\n')).toEqual(["flows/broken.test.yaml:4:5 cases[0].expct: unknown key (did you mean 'expect'?)"]);
      expect(r.stdout).toContain('1 flow file(s), 2 flow test file(s), 1 with errors, 1 error(s)');
    }
  });

  it("a case's flow: that names no flow of flowsDir is an error at its position, with a did-you-mean", async () => {
    const dir = project({
      'config.yaml': LOCAL_CONFIG,
      'flows/greet.yaml': GREET_FLOW,
      'flows/greet.test.yaml': GREET_TEST.replace('flow: greet', 'flow: gret'),
    });
    const r = await cli(['validate', 'flows/greet.test.yaml'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("flows/greet.test.yaml:3:11 cases[0].flow: no flow named 'gret' in flows (did you mean 'greet'?)");
  });
});
