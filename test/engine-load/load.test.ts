import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FlowError } from '../../src/api/errors.js';
import { flowHash } from '../../src/engine/run/engine.js';
import { findFlow, loadFlowFile, loadFlows, validateFlowFiles, type LoadFlowOptions } from '../../src/engine/flow/load.js';
import { FlowFileError } from '../../src/engine/flow/errors.js';
import { builtinRegistry, tempProject } from './helpers.js';

/** A flow using every kind of value: the example of the flow format. */
const VERIFY_LEADS = `name: verify-leads
description: Which leads have an account?
instance: default                  # a name from config.yaml
on:
  schedule: { cron: "0 9 * * 1-5", timezone: Europe/Berlin }
  overlap: skip                    # skip | queue | allow
  missed: last                     # on start-up, for runs missed while down: none | last | all
inputs:
  leads: { file: data/leads.csv }  # CSV, JSON or YAML files; inline values; defaults
steps:
  - id: check
    uses: checkAccount             # an action: built-in or from a plugin
    forEach: \${{ inputs.leads }}
    concurrency: 2
    with: { phoneNumber: "\${{ item.phone }}" }
    retry: { maxAttempts: 5, backoff: exponential, delay: 2s, maxDelay: 10m, jitter: true }
    timeout: 30s
  - id: notify
    if: \${{ steps.check.failed > 0 }}
    uses: log
    with: { message: "\${{ steps.check.failed }} checks failed" }
`;

function opts(dir: string, extra: Partial<LoadFlowOptions> = {}): LoadFlowOptions {
  return { registry: builtinRegistry(), baseDir: dir, instances: ['default', 'remote'], env: {}, ...extra };
}

/** The error lines of a file, with the temp dir path cut to `F`. */
function errorLines(file: string, o: LoadFlowOptions): string[] {
  try {
    loadFlowFile(file, o);
  } catch (e) {
    expect(e).toBeInstanceOf(FlowFileError);
    const err = e as FlowFileError;
    expect(err.message).toBe(err.errors.map((x) => x.message).join('\n'));
    return err.errors.map((x) => x.message.split(file).join('F'));
  }
  throw new Error('expected the flow to be invalid');
}

describe('loadFlowFile', () => {
  it('loads a flow using every kind of value into a Flow with defaults and durations in ms', () => {
    const dir = tempProject({ 'flows/verify.yaml': VERIFY_LEADS });
    const flow = loadFlowFile(path.join(dir, 'flows/verify.yaml'), opts(dir));
    expect(flow.name).toBe('verify-leads');
    expect(flow.instance).toBe('default');
    expect(flow.on).toEqual({
      schedule: { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' },
      overlap: 'skip',
      missed: 'last',
      startup: false,
    });
    expect(flow.inputs).toEqual({ leads: { file: 'data/leads.csv' } });
    expect(flow.baseDir).toBe(dir);
    expect(flow.file).toBe(path.join(dir, 'flows/verify.yaml'));
    const [check, notify] = flow.steps;
    expect(check).toMatchObject({
      id: 'check',
      uses: 'checkAccount',
      forEach: '${{ inputs.leads }}',
      concurrency: 2,
      with: { phoneNumber: '${{ item.phone }}' },
      retry: { maxAttempts: 5, backoff: 'exponential', delayMs: 2000, maxDelayMs: 600_000, jitter: true },
      timeoutMs: 30_000,
      continueOnError: false,
    });
    expect(check!.location).toMatch(/verify\.yaml:11:5$/);
    expect(notify).toMatchObject({
      if: '${{ steps.check.failed > 0 }}',
      uses: 'log',
      retry: { maxAttempts: 1, delayMs: 1000 },
      concurrency: 1,
    });
    expect(notify!.timeoutMs).toBeUndefined();
    expect(Object.isFrozen(flow.steps[0]!.with)).toBe(true);
  });

  it('parses every duration form', () => {
    const dir = tempProject({
      'f.yaml': `name: d
steps:
  - { id: a, uses: log, with: { message: x }, timeout: 500ms, retry: { delay: 1h30m, maxDelay: 1d } }
  - { id: b, uses: log, with: { message: x }, timeout: 2500, retry: { delay: 1.5s, maxDelay: 10m } }
`,
    });
    const flow = loadFlowFile(path.join(dir, 'f.yaml'), opts(dir));
    expect(flow.steps.map((s) => [s.timeoutMs, s.retry.delayMs, s.retry.maxDelayMs])).toEqual([
      [500, 5_400_000, 86_400_000],
      [2500, 1500, 600_000],
    ]);
  });

  it('reports every problem of a file, each as file:line:col key.path: reason', () => {
    const dir = tempProject({
      'bad.yaml': `name: bad
instance: staging
on:
  schedule: { cron: "61 * * * *", timezone: Europe/Berlinn }
  overlapp: skip
inputs:
  leads: { value: [1, 2] }
steps:
  - id: check
    uses: chekAccount
    forEach: \${{ inputs.leads }}
    timeout: 2x
    retry: { delay: soon }
  - id: check
    uses: sendFileByUrl
    with: { chatID: "1@c.us", urlFile: ftp://x, fileName: a.png, typingTime: "fast" }
  - id: note
    uses: log
    if: \${{ steps.later.done > 0 && steps.chek.failed }}
    with: { message: "\${{ inputs.lead }} and \${{ item.x }} \${{ steps.check.outputs }}" }
  - id: later
    uses: log
    with: { message: "\${{ 1 + }}" }
`,
    });
    const file = path.join(dir, 'bad.yaml');
    expect(errorLines(file, opts(dir))).toEqual([
      "F:2:11 instance: unknown instance 'staging': config.yaml declares default, remote",
      'F:4:21 on.schedule.cron: invalid cron expression "61 * * * *": minute (0-59) cannot be "61"',
      'F:4:45 on.schedule.timezone: unknown timezone "Europe/Berlinn": expected an IANA zone name such as Europe/Berlin or UTC',
      "F:5:3 on.overlapp: unknown key 'overlapp' (did you mean 'overlap'?)",
      "F:10:11 steps[0].uses: unknown action 'chekAccount' (did you mean 'checkAccount'?)",
      'F:12:14 steps[0].timeout: expected a duration: use a number of ms or a duration such as 500ms, 2s, 10m, 1h30m',
      'F:13:21 steps[0].retry.delay: expected a duration: use a number of ms or a duration such as 500ms, 2s, 10m, 1h30m',
      "F:14:9 steps[1].id: duplicate step id 'check' (first used by steps[0])",
      "F:16:11 steps[1].with: action 'sendFileByUrl' needs 'chatId' in with:",
      "F:16:13 steps[1].with.chatID: unknown key 'chatID' for action 'sendFileByUrl' (did you mean 'chatId'?); it takes chatId, urlFile, fileName, caption, quotedMessageId, typingTime, typingType",
      "F:16:40 steps[1].with.urlFile: url has incorrect format. It should start with http(s):// (action 'sendFileByUrl')",
      "F:16:78 steps[1].with.typingTime: 'typingTime' must be a number (action 'sendFileByUrl')",
      "F:19:19 steps[2].if: expression error in ${{ steps.later.done > 0 && steps.chek.failed }}: step 'later' runs after this step: its result is not there yet",
      "F:19:43 steps[2].if: expression error in ${{ steps.later.done > 0 && steps.chek.failed }}: unknown step 'chek' (did you mean 'check'?)",
      "F:20:34 steps[2].with.message: expression error in ${{ inputs.lead }}: unknown input 'lead' (did you mean 'leads'?); inputs: leads",
      "F:20:50 steps[2].with.message: expression error in ${{ item.x }}: 'item' is only set in a step with forEach",
      "F:20:76 steps[2].with.message: expression error in ${{ steps.check.outputs }}: steps.check has no 'outputs' (did you mean 'output'?): use status, output, done, failed, total, results, error",
      'F:23:31 steps[3].with.message: expression error in ${{ 1 + }}: unexpected end of expression',
    ]);
  });

  it('gives each problem as a FlowIssue with file, line, col, key path and reason', () => {
    const dir = tempProject({ 'p.yaml': 'name: p\nsteps:\n  - { id: a, uses: lgo }\n' });
    try {
      loadFlowFile(path.join(dir, 'p.yaml'), opts(dir));
      expect.unreachable();
    } catch (e) {
      const issue = (e as FlowFileError).errors[0]!;
      expect(issue).toBeInstanceOf(FlowError);
      expect(issue.code).toBe('UNKNOWN_ACTION');
      expect({ file: issue.file, line: issue.line, col: issue.col, keyPath: issue.keyPath, reason: issue.reason }).toEqual({
        file: path.join(dir, 'p.yaml'),
        line: 3,
        col: 20,
        keyPath: 'steps[0].uses',
        reason: "unknown action 'lgo' (did you mean 'log'?)",
      });
      expect((e as FlowFileError).code).toBe('UNKNOWN_ACTION');
    }
  });

  it('reports unknown top-level and step keys with suggestions, and wrong types', () => {
    const dir = tempProject({
      'k.yaml': `name: k
step: []
steps:
  - id: a
    uses: log
    with: { message: hi, level: loud }
    forEch: [1]
    concurrency: many
  - id: b-c
    uses: log
    with: { message: 5 }
`,
    });
    expect(errorLines(path.join(dir, 'k.yaml'), opts(dir))).toEqual([
      "F:2:1 step: unknown key 'step' (did you mean 'steps'?)",
      'F:6:33 steps[0].with.level: Invalid option: expected one of "debug"|"info"|"warn"|"error" (action \'log\')',
      "F:7:5 steps[0].forEch: unknown key 'forEch' (did you mean 'forEach'?)",
      "F:8:18 steps[0].concurrency: expected number, got 'many'",
      "F:9:9 steps[1].id: step id must start with a letter or '_' and contain only letters, digits and '_' (it is used in expressions)",
    ]);
  });

  it('refuses a YAML alias bomb and a huge file with a clear error', () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x","x"]',
      'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]',
      'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]',
      'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]',
      'e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]',
      'name: bomb',
      'steps: [{ id: a, uses: log, with: { message: *e } }]',
    ].join('\n');
    const dir = tempProject({ 'bomb.yaml': bomb, 'huge.yaml': `name: huge\n# ${'x'.repeat(2 * 1024 * 1024)}\n` });
    expect(errorLines(path.join(dir, 'bomb.yaml'), opts(dir))).toEqual([
      'F:1:1 (root): too many YAML alias expansions (an alias bomb?): refused',
    ]);
    expect(errorLines(path.join(dir, 'huge.yaml'), opts(dir))).toEqual([
      `F:1:1 (root): file is ${2 * 1024 * 1024 + 14} bytes, more than the 1048576 bytes a flow file may have`,
    ]);
  });

  it('reports YAML syntax errors and non-mapping files with positions', () => {
    const dir = tempProject({
      'syn.yaml': 'name: x\nsteps:\n  - id: a\n   uses: log\n',
      'list.yaml': '- 1\n',
      'dup.yaml': 'name: a\nname: b\nsteps: []\n',
    });
    expect(errorLines(path.join(dir, 'syn.yaml'), opts(dir))[0]).toMatch(/^F:4:\d+ \(root\): YAML syntax error: /);
    expect(errorLines(path.join(dir, 'list.yaml'), opts(dir))).toEqual([
      'F:1:1 (root): a flow file must be a mapping with at least name and steps',
    ]);
    expect(errorLines(path.join(dir, 'dup.yaml'), opts(dir))[0]).toMatch(/^F:2:1 \(root\): YAML syntax error: Map keys must be unique/);
  });

  it('resolves env: lists and NAME: ${VAR:-default} pairs; env.* must be listed', () => {
    const dir = tempProject({
      'e.yaml': `name: e
env: { REGION: "\${REGION:-eu}", TOKEN: "\${SECRET}", FIXED: plain }
steps:
  - { id: a, uses: log, with: { message: "\${{ env.REGION }} \${{ env.HOME }}" } }
`,
      'ok.yaml': `name: ok
env: [HOME_DIR, NOT_SET]
steps:
  - { id: a, uses: log, with: { message: "\${{ env.HOME_DIR }} \${{ env.NOT_SET }}" } }
`,
    });
    expect(errorLines(path.join(dir, 'e.yaml'), opts(dir))).toEqual([
      'F:2:40 env.TOKEN: environment variable SECRET is not set and has no default (write ${SECRET:-default})',
      'F:4:69 steps[0].with.message: expression error in ${{ env.HOME }}: env.HOME is not available: a flow reads only the variables it lists under env:',
    ]);
    writeFileSync(path.join(dir, 'e.yaml'), readFileSync(path.join(dir, 'e.yaml'), 'utf8').replace(' ${{ env.HOME }}', ''));
    const flow = loadFlowFile(path.join(dir, 'e.yaml'), opts(dir, { env: { SECRET: 's3' } }));
    expect(flow.env).toEqual({ REGION: 'eu', TOKEN: 's3', FIXED: 'plain' });
    const ok = loadFlowFile(path.join(dir, 'ok.yaml'), opts(dir, { env: { HOME_DIR: '/h', NOT_SET: '' } }));
    expect(ok.env).toEqual({ HOME_DIR: '/h', NOT_SET: '' });
    // A listed variable that is unset is an error naming it and its position, not a silent "".
    expect(errorLines(path.join(dir, 'ok.yaml'), opts(dir, { env: { HOME_DIR: '/h' } }))).toEqual([
      'F:2:17 env[1]: environment variable NOT_SET is not set (listed in env:); set it, or write env: { NOT_SET: "${NOT_SET:-default}" }',
    ]);
  });

  it('checks with: statically (literal values, missing keys) and leaves templates to run time', () => {
    const dir = tempProject({
      'w.yaml': `name: w
steps:
  - id: a
    uses: getChatHistory
    with: { chatId: "\${{ 'x' }}", count: "\${{ 5 }}" }
  - id: b
    uses: getChatHistory
    with: { chatId: "79001112233@c.us", count: 0 }
  - id: c
    uses: deleteContact
  - id: d
    uses: lastOutgoingMessages
`,
    });
    expect(errorLines(path.join(dir, 'w.yaml'), opts(dir))).toEqual([
      "F:8:48 steps[1].with.count: 'count' must be greater than or equal to 1 (action 'getChatHistory')",
      "F:9:5 steps[2]: action 'deleteContact' needs 'chatId' in with: (the step has no with:)",
    ]);
  });

  it('checks that forEach items are only used in forEach steps and forEach itself', () => {
    const dir = tempProject({
      'i.yaml': `name: i
steps:
  - id: a
    uses: log
    forEach: \${{ item }}
    with: { message: "\${{ index }}: \${{ item.name }}" }
`,
    });
    expect(errorLines(path.join(dir, 'i.yaml'), opts(dir))).toEqual([
      "F:5:18 steps[0].forEach: expression error in ${{ item }}: 'item' is not set yet while forEach is evaluated",
    ]);
  });
});

describe('loadFlows, findFlow, validateFlowFiles', () => {
  const good = (name: string) => `name: ${name}\nsteps:\n  - { id: a, uses: log, with: { message: hi } }\n`;

  it('loads a directory, keeping broken files and duplicate names as errors', () => {
    const dir = tempProject({
      'flows/a.yaml': good('alpha'),
      'flows/b.yml': good('beta'),
      'flows/c.yaml': good('alpha'),
      'flows/d.yaml': 'name: delta\nsteps:\n  - { id: a, uses: nope }\n',
      'flows/readme.txt': 'not a flow',
    });
    const { flows, errors } = loadFlows(path.join(dir, 'flows'), opts(dir));
    expect(flows.map((f) => f.name)).toEqual(['alpha', 'beta']);
    expect(errors.map((e) => e.message.split(dir + path.sep).join(''))).toEqual([
      "flows/c.yaml:1:7 name: flow name 'alpha' is also used by flows/a.yaml",
      "flows/d.yaml:3:20 steps[0].uses: unknown action 'nope'",
    ]);
    expect(loadFlows(path.join(dir, 'none'), opts(dir))).toEqual({ flows: [], errors: [] });
  });

  it('finds a flow by name, file stem or path, and lists names when not found', () => {
    const dir = tempProject({
      'flows/a.yaml': good('alpha'),
      'flows/b.yaml': good('beta'),
      'flows/broken.yaml': 'name: gamma\nsteps: 3\n',
    });
    const flowsDir = path.join(dir, 'flows');
    expect(findFlow(flowsDir, 'beta', opts(dir)).name).toBe('beta');
    expect(findFlow(flowsDir, 'a', opts(dir)).name).toBe('alpha');
    expect(findFlow(flowsDir, path.join(flowsDir, 'b.yaml'), opts(dir)).name).toBe('beta');
    expect(() => findFlow(flowsDir, 'gamma', opts(dir))).toThrow(/steps: expected array, got 3/);
    try {
      findFlow(flowsDir, 'alpah', opts(dir));
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(FlowError);
      expect((e as FlowError).code).toBe('FLOW_NOT_FOUND');
      expect((e as FlowError).message).toMatch(
        /flow 'alpah' not found in .*flows \(did you mean 'alpha'\?\); available: alpha, beta, gamma$/,
      );
    }
  });

  it("a streamed input needs a file, and its value is the file's path: declared as another type it is an error at its place", () => {
    const dir = tempProject({
      'flows/s.yaml':
        'name: s\ninputs:\n  leads: { file: data/l.csv, stream: true, type: array }\n  other: { stream: true }\nsteps:\n  - { id: a, uses: log, with: { message: hi } }\n',
      'data/l.csv': 'phone\n1\n',
    });
    const [res] = validateFlowFiles([path.join(dir, 'flows/s.yaml')], opts(dir));
    expect(res!.errors.map((e) => e.message.slice(e.message.indexOf(' ') + 1))).toEqual([
      "inputs.leads.type: input 'leads' streams its file: its value is the file's path (type string), not type array",
      "inputs.other: 'stream' needs 'file': it streams the input's data file",
    ]);
  });

  it('validates files and directories: every error, duplicates across files, missing data files', () => {
    const dir = tempProject({
      'flows/a.yaml': `name: alpha\ninputs:\n  leads: { file: data/missing.csv }\nsteps:\n  - { id: a, uses: log, with: { message: hi } }\n`,
      'flows/b.yaml': good('alpha'),
      'flows/c.yaml': 'name: c\nsteps:\n  - { id: a, uses: log, with: { mesage: hi } }\n',
      'other.yaml': good('other'),
    });
    const res = validateFlowFiles([path.join(dir, 'flows'), path.join(dir, 'other.yaml'), path.join(dir, 'nope.yaml')], opts(dir));
    const summary = res.map((r) => [path.basename(r.file), r.errors.map((e) => e.message.slice(e.message.indexOf(' ') + 1))]);
    expect(summary).toEqual([
      ['a.yaml', [`inputs.leads.file: data file not found: ${path.join(dir, 'data/missing.csv')}`]],
      ['b.yaml', [`name: flow name 'alpha' is also used by ${path.join(dir, 'flows/a.yaml').replace(process.cwd() + path.sep, '')}`]],
      [
        'c.yaml',
        [
          "steps[0].with: action 'log' needs 'message' in with:",
          "steps[0].with.mesage: unknown key 'mesage' for action 'log' (did you mean 'message'?); it takes message, level, fields",
        ],
      ],
      ['other.yaml', []],
      ['nope.yaml', ['(root): file not found']],
    ]);
  });
});

describe("a flow's hash", () => {
  it('is the hash of the text loaded: a run of a loaded flow records it without reading the file, and a new text gets a new one', () => {
    const dir = tempProject({ 'flows/verify.yaml': VERIFY_LEADS });
    const file = path.join(dir, 'flows/verify.yaml');
    const loaded = loadFlowFile(file, opts(dir));
    const hash = flowHash(loaded);
    expect(hash).toMatch(/^[0-9a-f]{16}$/);
    writeFileSync(file, VERIFY_LEADS.replace('Which leads', 'Which of the leads'));
    expect(flowHash(loaded)).toBe(hash);
    expect(flowHash(loadFlowFile(file, opts(dir)))).not.toBe(hash);
    writeFileSync(file, VERIFY_LEADS);
    expect(flowHash(loadFlowFile(file, opts(dir)))).toBe(hash);
  });
});
