/**
 * waitForReply under `msgflow test`: the case's replies arrive as
 * notifications on the virtual clock; a 2-hour deadline passes in
 * milliseconds of wall time.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';

const CONFIG = `instances:
  default:
    apiUrl: local
local:
  port: 0
  network:
    accounts:
      - { phone: 79001112233, name: Alice }
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: reply-test-token-3e9a
      sendIntervalMs: 500
`;

const FLOW = `name: ask
steps:
  - id: ask
    uses: sendMessage
    with: { chatId: 79001112233@c.us, message: "Shall we deliver tomorrow? (yes/no)" }
  - id: answer
    uses: waitForReply
    with: { chatId: 79001112233@c.us, timeout: 2h, poll: 1m }
  - id: booked
    if: \${{ steps.answer.output.outcome == 'replied' && lower(steps.answer.output.text) == 'yes' }}
    uses: sendMessage
    with: { chatId: 79001112233@c.us, message: "Booked." }
`;

const TESTS = `cases:
  - name: a yes after 30 minutes books the delivery
    flow: ask
    replies:
      - { after: 10s, from: 79009999999, text: "not the one we wait for" }
      - { after: 30m, from: 79001112233, text: "Yes" }
    expect:
      status: succeeded
      elapsed: { atLeast: 30m, atMost: 32m }
      steps:
        answer: { output: { outcome: replied, text: "Yes", chatId: 79001112233@c.us } }
        booked: { status: succeeded }
  - name: nobody answers within 2 hours
    flow: ask
    expect:
      status: succeeded
      elapsed: { atLeast: 2h, atMost: 2h5m }
      steps:
        answer: { output: { outcome: timeout, waitedMs: 7200000 } }
        booked: { status: skipped }
`;

describe('waitForReply in flow tests (virtual clock)', () => {
  it('sees a reply that arrives 30 virtual minutes later, and times out after 2 virtual hours', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-reply-'));
    try {
      mkdirSync(path.join(dir, 'flows'));
      writeFileSync(path.join(dir, 'config.yaml'), CONFIG);
      writeFileSync(path.join(dir, 'flows/ask.yaml'), FLOW);
      writeFileSync(path.join(dir, 'flows/ask.test.yaml'), TESTS);
      const r = await cli(['test'], dir);
      expect(r.stdout + r.stderr).toMatch(/2 passed, 0 failed/);
      expect(r.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
