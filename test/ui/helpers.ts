/**
 * A temp msgflow project (config.yaml with the local service in-process, YAML
 * flows) with a real Runtime and the dashboard on 127.0.0.1:0.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { busLogger } from '../../src/engine/run/engine.js';
import { createBus } from '../../src/engine/events.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { createUiServer, type UiServer, type UiServerOptions } from '../../src/ui/server.js';

export const LOCAL_ID = '1101000077';
export const LOCAL_TOKEN = 'ui-test-secret-token-4711';

const NUMBERS = ['79001112233', '79002223344', '79003334455', '79004445566', '79005550000', '12', '79009998877', '79001112233'];

export const FLOWS: Record<string, string> = {
  'check-some.yaml': `name: check-some
description: Checks a few numbers.
on:
  schedule: { cron: "0 9 * * 1-5", timezone: Europe/Berlin }
inputs:
  numbers:
    type: array
    default: ${JSON.stringify(NUMBERS)}
steps:
  - id: check
    uses: checkAccount.bulk
    with:
      items: \${{ inputs.numbers }}
      pace: { delay: 10ms, jitter: 0 }
      report: reports/check-some.csv
`,
  'slow-check.yaml': `name: slow-check
description: Checks numbers slowly (long enough to cancel).
inputs:
  numbers:
    type: array
    default: ${JSON.stringify(Array.from({ length: 40 }, (_, i) => String(79100000000 + i)))}
steps:
  - id: each
    uses: checkAccount
    forEach: \${{ inputs.numbers }}
    with:
      phoneNumber: \${{ item }}
`,
  'fail-some.yaml': `name: fail-some
description: One good number and one that is not a number.
steps:
  - id: each
    uses: checkAccount
    forEach: \${{ ["79001112233", "not-a-number"] }}
    with:
      phoneNumber: \${{ item }}
`,
  'audit.yaml': `name: audit
description: Audits the last hour of outgoing messages.
steps:
  - id: audit
    uses: outgoing.audit
    with:
      minutes: 60
`,
  'xss.yaml': `name: xss
description: "<script>window.__xss = 1</script><img src=x onerror=\\"window.__xss = 2\\">"
steps:
  - id: say
    uses: log
    with:
      message: hello
`,
};

/**
 * Flows for Run now beyond inputs: `greet` is started by an incoming "hi" or
 * "menu" and answers the sender (it reads `event`); `brochure` sends a file
 * only within a send window that opens `opensInMs` from now.
 */
export function runNowFlows(opensInMs = 2 * 3_600_000): Record<string, string> {
  const start = new Date(Date.now() + opensInMs).toISOString();
  const stop = new Date(Date.now() + opensInMs + 3_600_000).toISOString();
  return {
    'greet.yaml': `name: greet
description: Answers hi or menu with the menu.
on:
  notification:
    type: incomingMessageReceived
    text: "^(hi|menu)$"
steps:
  - id: menu
    uses: sendMessage
    with:
      chatId: "\${{ event.senderData.chatId }}"
      message: "Menu: 1. brochure"
`,
    'brochure.yaml': `name: brochure
description: Sends the brochure within the send window.
steps:
  - id: send
    uses: files.broadcast
    with:
      recipients: ["79001112233"]
      urlFile: http://127.0.0.1:9/brochure.pdf
      fileName: brochure.pdf
      window: { start: "${start}", stop: "${stop}" }
`,
  };
}

export interface Project {
  dir: string;
  runtime: Runtime;
  server: UiServer;
  url: string;
  close(): Promise<void>;
}

/**
 * The project's config.yaml, flows and reports folder in a temp dir. `unpaced`: the local
 * instance allows checkAccount unlimited (instead of its 10 a second), so a check-some run
 * does not wait out the spacing; slow-check is then no longer slow (no cancel tests there).
 */
export function writeProject(extraConfig = '', opts: { unpaced?: boolean; flows?: Record<string, string> } = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-ui-'));
  mkdirSync(path.join(dir, 'flows'));
  mkdirSync(path.join(dir, 'reports'));
  writeFileSync(
    path.join(dir, 'config.yaml'),
    `instances:
  default:
    apiUrl: local
local:
  port: 0
  dataDir: .msgflow/local
  network:
    accounts:
      - { phone: 79001112233, name: Alice }
      - { phone: 79002223344, name: Bob }
      - { phone: 79003334455, name: Carol }
  instances:
    - idInstance: "${LOCAL_ID}"
      apiTokenInstance: "${LOCAL_TOKEN}"
      state: authorized
      sendIntervalMs: 500${opts.unpaced ? '\n      rateLimits: { checkAccount: 0 }' : ''}
flowsDir: flows
store:
  driver: lowdb
  dir: .msgflow/state
logLevel: error
${extraConfig}`,
  );
  for (const [file, text] of Object.entries({ ...FLOWS, ...opts.flows })) writeFileSync(path.join(dir, 'flows', file), text);
  return dir;
}

/** A project with a runtime (clients log to the bus, as `msgflow start` wires them) and the dashboard. */
export async function startProject(
  opts: Partial<UiServerOptions> & { extraConfig?: string; unpaced?: boolean; flows?: Record<string, string> } = {},
): Promise<Project> {
  const { extraConfig, unpaced, flows, ...serverOpts } = opts;
  const dir = writeProject(extraConfig, { unpaced, flows });
  const config = loadConfig(path.join(dir, 'config.yaml'));
  const bus = createBus();
  const runtime = await createRuntime({ config, command: 'test', bus, logger: busLogger(bus) });
  const server = await createUiServer({ runtime, port: 0, throttleMs: 50, pollMs: 200, reloadMs: 200, recentMs: 200, ...serverOpts });
  return {
    dir,
    runtime,
    server,
    url: server.url,
    async close() {
      await server.close();
      await runtime.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function get(url: string): Promise<{ status: number; body: any; text: string; headers: Headers }> {
  const res = await fetch(url);
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text, headers: res.headers };
}

export async function post(url: string, json?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Reads server-sent events until `stop` returns true for one of them. */
export async function readEvents(
  url: string,
  stop: (e: { event: string; data: any }) => boolean,
  timeoutMs = 20_000,
): Promise<Array<{ event: string; data: any }>> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  const seen: Array<{ event: string; data: any }> = [];
  try {
    const res = await fetch(url, { signal: ac.signal });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const chunk = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let event = 'message';
        const data: string[] = [];
        for (const line of chunk.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (data.length === 0) continue;
        const e = { event, data: JSON.parse(data.join('\n')) };
        seen.push(e);
        if (stop(e)) {
          ac.abort();
          return seen;
        }
      }
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e;
    throw new Error(`no matching event within ${timeoutMs} ms; saw ${JSON.stringify(seen).slice(0, 2000)}`);
  } finally {
    clearTimeout(timer);
  }
  return seen;
}
