/**
 * Config validation reports every error (not only the first) with a
 * did-you-mean, and refuses the reserved names `__proto__`, `constructor` and
 * `prototype`: through `msgflow validate` in-process.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { captureIo } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

async function validateIn(dir: string, ...args: string[]) {
  const io = captureIo({ cwd: dir });
  const code = await runCli(['validate', ...args], io);
  return { code, out: io.stdoutText(), err: io.stderrText() };
}

describe('config validation reports every error', () => {
  it('all errors of config.yaml, in file order, each with file:line:col and a did-you-mean for unknown keys', async () => {
    const dir = project({
      'config.yaml': [
        'instances:',
        '  default:',
        '    apiUrl: local',
        '    retires: 3',
        'flowDir: flows',
        'logLevel: loud',
        'local:',
        '  instances:',
        '    - idInstance: "1101000001"',
        '      apiTokenInstance: tok-12345',
        '      sendIntervalMs: 500',
        '',
      ].join('\n'),
    });
    const r = await validateIn(dir);
    expect(r.code).toBe(1);
    expect(r.err.trim().split('\n')).toEqual([
      "config.yaml:4:5 instances.default.retires: unknown key (did you mean 'retries'?)",
      "config.yaml:5:1 flowDir: unknown key (did you mean 'flowsDir'?)",
      expect.stringMatching(/^config\.yaml:6:11 logLevel: .*"debug"\|"info"\|"warn"\|"error"\|"silent"/),
      'config.yaml: invalid; flows not checked',
    ]);
  });

  it('did-you-mean reaches nested sections (store variants, local, rate limits)', async () => {
    const { parseConfig } = await import('../../src/config/load.js');
    const text =
      'instances:\n  default:\n    apiUrl: local\n    rateLimits: { checkAcount: 1 }\nstore: { driver: redis, urll: x }\nlocal:\n  prot: 7070\n  instances:\n    - idInstance: "1"\n      apiTokenInstance: tok-1234\n';
    expect(() => parseConfig(text, 'config.yaml', { env: {} })).toThrow(
      [
        "config.yaml:4:19 instances.default.rateLimits.checkAcount: unknown key (did you mean 'checkAccount'?)",
        "config.yaml:5:25 store.urll: unknown key (did you mean 'url'?)",
        "config.yaml:7:3 local.prot: unknown key (did you mean 'port'?)",
      ].join('\n'),
    );
  });

  it('every unset variable is named, not only the first', async () => {
    const dir = project({
      'config.yaml': 'instances:\n  a:\n    apiUrl: ${MSGFLOW_T_A}\n    idInstance: "1"\n    apiTokenInstance: ${MSGFLOW_T_TOKEN}\n',
    });
    const r = await validateIn(dir);
    expect(r.err).toContain('config.yaml:3:13 instances.a.apiUrl: environment variable MSGFLOW_T_A is not set and has no default');
    expect(r.err).toContain(
      'config.yaml:5:23 instances.a.apiTokenInstance: environment variable MSGFLOW_T_TOKEN is not set and has no default',
    );
  });
});

describe('reserved names refused by validate', () => {
  it('__proto__, constructor, prototype as keys, input names and step ids, each with its position', async () => {
    const dir = project({
      'config.yaml': LOCAL_CONFIG,
      'flows/p.yaml': [
        'name: p',
        'inputs:',
        '  constructor: { value: 1 }',
        'steps:',
        '  - id: prototype',
        '    uses: log',
        '    with: { message: hi, fields: { __proto__: 1 } }',
        '',
      ].join('\n'),
    });
    const r = await validateIn(dir);
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      "flows/p.yaml:3:3 inputs.constructor: 'constructor' cannot be used as a key: it names JavaScript object internals",
    );
    expect(r.err).toContain("flows/p.yaml:5:9 steps[0].id: 'prototype' cannot be a step id: it names JavaScript object internals");
    expect(r.err).toContain("flows/p.yaml:7:36 steps[0].with.fields.__proto__: '__proto__' cannot be used as a key");
  });

  it('and in config.yaml (an instance named constructor)', async () => {
    const dir = project({ 'config.yaml': LOCAL_CONFIG.replace('  default:\n', '  constructor:\n    apiUrl: local\n  default:\n') });
    const r = await validateIn(dir);
    expect(r.code).toBe(1);
    expect(r.err).toContain("config.yaml:2:3 instances.constructor: 'constructor' cannot be used as a key");
  });
});
