import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig, parseConfig } from '../../src/config/load.js';

const file = path.join(process.cwd(), 'config.yaml');
const err = (text: string, env: Record<string, string> = {}): string => {
  try {
    parseConfig(text, file, { env });
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected an error');
};

describe('config.yaml', () => {
  it("loads the repo's own config.yaml", () => {
    const c = loadConfig('config.yaml', { env: {} });
    expect(c.instances.default!.apiUrl).toBe('local');
    expect(c.local!.instances[0]!.apiTokenInstance).toBe('local-dev-token');
    expect(Object.isFrozen(c.local!.instances[0])).toBe(true);
  });

  it('names file, line, column and key path', () => {
    const text = 'instances:\n  default:\n    apiUrl: https://api.example.com\n    idInstance: abc\n    apiTokenInstance: t\n';
    expect(err(text)).toBe('config.yaml:4:17 instances.default.idInstance: expected digits');
  });

  it('rejects unknown keys, pointing at the key', () => {
    expect(
      err(
        'instances:\n  default:\n    apiUrl: local\n    apiurl: x\nlocal:\n  instances: [{ idInstance: "1", apiTokenInstance: "12345678" }]\n',
      ),
    ).toBe("config.yaml:4:5 instances.default.apiurl: unknown key (did you mean 'apiUrl'?)");
    expect(err('locals: {}\n')).toBe("config.yaml:1:1 locals: unknown key (did you mean 'local'?)");
  });

  it('interpolates ${ENV} and ${ENV:-default}', () => {
    const text = 'instances:\n  r:\n    apiUrl: ${URL:-https://api.example.com}\n    idInstance: ${ID}\n    apiTokenInstance: ${TOKEN}\n';
    const c = parseConfig(text, file, { env: { ID: '1101', TOKEN: 'secret-token' } });
    expect(c.instances.r).toMatchObject({ apiUrl: 'https://api.example.com', idInstance: '1101', apiTokenInstance: 'secret-token' });
    const m = err(text, { ID: '1101' });
    expect(m).toBe('config.yaml:5:23 instances.r.apiTokenInstance: environment variable TOKEN is not set and has no default');
  });

  it('remote instances need an id and a token; local ones need a local section', () => {
    expect(err('instances:\n  r:\n    apiUrl: https://api.example.com\n')).toMatch(
      /instances\.r\.idInstance: required for a remote apiUrl/,
    );
    expect(err('instances:\n  d:\n    apiUrl: local\n')).toMatch(
      /instances\.d\.apiUrl: apiUrl is 'local' but the local: section declares no instances/,
    );
  });

  it('a config with only a local: section is valid', () => {
    const c = parseConfig(
      'local:\n  port: 0\n  instances:\n    - idInstance: "1101000001"\n      apiTokenInstance: local-dev-token\n',
      file,
      { env: {} },
    );
    expect(c.local!.instances[0]!.sendIntervalMs).toBe(3000);
    expect(c.local!.instances[0]!.checkAccountLimit).toEqual({ numbers: 100, windowMinutes: 10, retryAfterSeconds: 7200 });
  });

  it('a scripted reply of another kind is checked as the admin endpoint checks a message, the field named where it is', () => {
    const reply = (message: string) =>
      `local:\n  network:\n    accounts:\n      - phone: 79001112233\n        replies:\n          - message: ${message}\n`;
    expect(() =>
      parseConfig(reply('{ typeMessage: locationMessage, location: { latitude: 1, longitude: 2 } }'), file, { env: {} }),
    ).not.toThrow();
    expect(err(reply('{ typeMessage: locationMessage, location: { latitude: 91, longitude: 2 } }'))).toMatch(
      /^config\.yaml:6:\d+ local\.network\.accounts\[0\]\.replies\[0\]\.message\.location\.latitude: /,
    );
    expect(err(reply('{ typeMessage: textMessage, textMessage: hi, chatId: 79001112233@c.us }'))).toMatch(
      /local\.network\.accounts\[0\]\.replies\[0\]\.message: the account's chat and 'incoming' are given: leave out chatId and type$/,
    );
    expect(err('local:\n  network:\n    accounts:\n      - { phone: 79001112233, votes: [{ options: yes }] }\n')).toMatch(
      /^config\.yaml:4:\d+ local\.network\.accounts\[0\]\.votes\[0\]\.options: /,
    );
  });

  it('validates the local: section keys', () => {
    expect(err('local:\n  instances:\n    - idInstance: "1"\n      apiTokenInstance: local-dev-token\n      sendIntervalMs: 100\n')).toBe(
      'config.yaml:5:23 local.instances[0].sendIntervalMs: expected at least 500 ms',
    );
  });

  it('refuses YAML syntax errors and alias bombs with a position', () => {
    expect(err('a: [\n')).toMatch(/^config\.yaml:\d+:\d+: /);
    const bomb =
      'a: &a [1,2]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n';
    expect(err(bomb)).toMatch(/alias/);
  });

  it('reports a missing file', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-cfg-'));
    expect(() => loadConfig(path.join(dir, 'nope.yaml'))).toThrow(/config file not found/);
    writeFileSync(path.join(dir, 'c.yaml'), 'flowsDir: 3\n');
    expect(() => loadConfig(path.join(dir, 'c.yaml'))).toThrow(/flowsDir/);
  });
});
