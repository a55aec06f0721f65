/**
 * A caption is a template files.broadcast evaluates per recipient (ctx.render):
 * one that fails for a recipient makes that row invalid, and the report says
 * where in the flow the template is, as a load-time error would.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const dir = project({
  'config.yaml': LOCAL_CONFIG,
  'data/recipients.csv': 'phone,firstName\n79001112233,Al\n79002223344,"{""a"":1}"\n',
  'flows/brochure.yaml': `name: brochure
steps:
  - id: send
    uses: files.broadcast
    with:
      file: data/recipients.csv
      urlFile: http://127.0.0.1:9/brochure.pdf
      fileName: brochure.pdf
      caption: "Hi \${{ fromJSON(item.firstName).a }}"
`,
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("a caption that fails for one recipient makes its row invalid, and the report names the template's place in the flow", async () => {
  const r = await cli(['run', 'brochure', '--dry-run'], dir);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  const [report] = readdirSync(path.join(dir, 'reports'));
  const rows = readFileSync(path.join(dir, 'reports', report!), 'utf8').split('\r\n');
  expect(rows.find((l) => l.startsWith('79001112233@c.us'))).toMatch(
    /,invalid,.*flows\/brochure\.yaml:9:\d+ \(col \d+ of the value\): expression error in \$\{\{ fromJSON\(item\.firstName\)\.a \}\}: fromJSON\(\): not valid JSON/,
  );
  expect(rows.find((l) => l.startsWith('79002223344@c.us'))).toMatch(/,wouldSend,/);
});
