/**
 * The CLI runs in-process with an injected working directory, so
 * nothing may read process.cwd() behind its back: relative paths on the
 * command line, and file names in messages, follow `io.cwd`.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const LEADS_FLOW = `name: leads
instance: default
inputs:
  leads: { file: data/leads.csv }
steps:
  - id: count
    uses: log
    with: { message: "\${{ inputs.leads[0].phone }} first of \${{ length(inputs.leads) }}" }
`;

describe('the CLI follows its injected working directory', () => {
  it('run -i FILE reads the file relative to io.cwd, not the process working directory', async () => {
    const dir = project({
      'config.yaml': LOCAL_CONFIG,
      'flows/leads.yaml': LEADS_FLOW,
      'data/leads.csv': 'phone\n79001112233\n',
      'other.csv': 'phone\n79005550000\n79001112233\n',
    });
    expect(process.cwd()).not.toBe(dir);
    const r = await cli(['run', 'leads', '-i', 'leads=other.csv', '--json'], dir);
    expect(r.stderr).not.toMatch(/not found|ENOENT/);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('79005550000 first of 2');
  });

  it('run and validate show flow files relative to io.cwd, and find a flow given by relative path', async () => {
    const dir = project({
      'config.yaml': LOCAL_CONFIG,
      'flows/leads.yaml': LEADS_FLOW,
      'data/leads.csv': 'phone\n79001112233\n',
      'flows/bad.yaml': 'name: bad\ninstance: default\nsteps:\n  - id: a\n    uses: lgo\n',
    });
    const v = await cli(['validate'], dir);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(/^flows\/bad\.yaml:5:11 /m);
    expect(v.stdout).toContain('ok  flows/leads.yaml');
    expect(v.stdout).toMatch(/^config\.yaml: ok; 2 flow file\(s\), 1 with errors/m);
    expect(v.stderr + v.stdout).not.toContain(dir);

    const byPath = await cli(['run', 'flows/bad.yaml'], dir);
    expect(byPath.code).not.toBe(0);
    expect(byPath.stderr).toMatch(/(^|msgflow: )flows\/bad\.yaml:5:11 /m);

    const fromBelow = await cli(['validate', '--config', '../config.yaml', 'leads.yaml'], path.join(dir, 'flows'));
    expect(fromBelow.stdout).toContain('ok  leads.yaml');
    expect(fromBelow.code).toBe(0);
  });
});
