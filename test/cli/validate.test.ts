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

describe('validate: files the jobs read', () => {
  const NIGHTLY = `name: nightly
instance: default
inputs:
  f: { value: data/there.csv }
steps:
  - id: check
    uses: checkAccount.bulk
    with:
      file: data/missing.csv
  - id: import
    uses: contacts.import
    with: { file: data/there.csv }
  - id: templated
    uses: checkAccount.bulk
    with: { file: "\${{ inputs.f }}" }
  - id: folder
    uses: checkAccount.bulk
    with: { file: data }
  - id: notes
    uses: checkAccount.bulk
    with: { file: data/notes.txt }
  - id: audit
    uses: outgoing.audit
    with: { report: reports/audit.txt }
`;

  it('a literal with.file that does not exist, is a folder, or has a type the jobs cannot read, and a report of a type they cannot write, are errors at their position; a ${{ }} path is left to the run', async () => {
    const dir = project({
      'config.yaml': LOCAL_CONFIG,
      'flows/nightly.yaml': NIGHTLY,
      'data/there.csv': 'phone\n79001112233\n',
      'data/notes.txt': 'x\n',
    });
    const r = await cli(['validate'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      "flows/nightly.yaml:9:13 steps[0].with.file: data/missing.csv: file not found (action 'checkAccount.bulk' reads it; paths are relative to the project folder)",
      "flows/nightly.yaml:18:19 steps[3].with.file: data: a folder, not a file (action 'checkAccount.bulk' reads it)",
      "flows/nightly.yaml:21:19 steps[4].with.file: data/notes.txt: unsupported file type '.txt': use .csv, .json, .jsonl, .ndjson, .yaml, .yml (action 'checkAccount.bulk' reads it)",
      "flows/nightly.yaml:24:21 steps[5].with.report: reports/audit.txt: unsupported file type '.txt': use .csv, .json (action 'outgoing.audit' writes it)",
    ]);
    expect(r.stderr + r.stdout).not.toContain(dir);
  });
});

describe('validate: an apiUrl: local instance and the local instance it means', () => {
  it('a token that differs from the local instance it resolves to is an error at its position, naming neither token', async () => {
    const config = LOCAL_CONFIG.replace('    apiUrl: local\n', '    apiUrl: local\n    apiTokenInstance: wrong-token-4711\n');
    const dir = project({ 'config.yaml': config, 'flows/greet.yaml': GREET_FLOW });
    const r = await cli(['validate'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      'config.yaml:4:23 instances.default.apiTokenInstance: differs from local.instances[0].apiTokenInstance (config.yaml:14:25), the local instance it calls: every call would be refused (401); leave it out to use that one, or make them the same',
      'config.yaml: invalid; flows not checked',
    ]);
    const { parseConfig } = await import('../../src/config/load.js');
    const err = (() => {
      try {
        parseConfig(config, 'config.yaml', { env: {} });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).not.toMatch(/wrong-token-4711|cli-test-token-9f3a|1101000001/);
    // The same token is fine, and so is none.
    const same = LOCAL_CONFIG.replace('    apiUrl: local\n', '    apiUrl: local\n    apiTokenInstance: cli-test-token-9f3a\n');
    expect((await cli(['validate'], project({ 'config.yaml': same, 'flows/greet.yaml': GREET_FLOW }))).code).toBe(0);
  });
});

describe('validate: names of other flows', () => {
  const WATCHER = `name: watcher
instance: default
on:
  failure: { flows: [greet, gret] }
steps:
  - id: say
    uses: log
    with: { message: failed }
`;
  const CALLER = `name: caller
instance: default
steps:
  - id: child
    uses: flow/greet
`;

  it("an on.failure flow name that names no flow of the project is an error at its position, with a did-you-mean; '*' is accepted", async () => {
    const dir = project({
      'config.yaml': LOCAL_CONFIG,
      'flows/greet.yaml': GREET_FLOW,
      'flows/watcher.yaml': WATCHER,
      'flows/any.yaml': WATCHER.replace('name: watcher', 'name: any').replace('[greet, gret]', "['*']"),
    });
    const r = await cli(['validate'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      "flows/watcher.yaml:4:29 on.failure.flows[1]: unknown flow 'gret' (did you mean 'greet'?): no flow file has name: gret",
    ]);
    expect(r.stdout).toContain('ok  flows/any.yaml');
  });

  it('one file validated alone resolves its sub-flows and on.failure names against the other flow files of the flows directory', async () => {
    const dir = project({
      'config.yaml': LOCAL_CONFIG,
      'flows/greet.yaml': GREET_FLOW,
      'flows/caller.yaml': CALLER,
      'flows/watcher.yaml': WATCHER.replace(', gret', ', caller'),
    });
    for (const file of ['flows/caller.yaml', 'flows/watcher.yaml']) {
      const r = await cli(['validate', file], dir);
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain(`ok  ${file}`);
      expect(r.stdout).toContain('1 flow file(s), 0 with errors, 0 error(s)');
      expect(r.code).toBe(0);
    }
    const missing = await cli(['validate', 'flows/caller.yaml'], project({ 'config.yaml': LOCAL_CONFIG, 'flows/caller.yaml': CALLER }));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("flows/caller.yaml:5:11 steps[0].uses: unknown flow 'greet'");
  });
});
