/**
 * The files `msgflow init` writes: the smallest project that shows every part
 * (config with the embedded local service, a flow, its test, a TypeScript
 * plugin) and passes `msgflow validate` and `msgflow test` as written.
 */

export interface InitOptions {
  /** Project (package) name. */
  name: string;
  /** The dependency spec of msgflow: `file:/abs/path` from a checkout, else a version range. */
  msgflowSpec: string;
  /** Version ranges of `typescript` and `@types/node`, for `npm run typecheck`: the ones msgflow is built with. */
  typescriptSpec: string;
  typesNodeSpec: string;
}

export function initFiles(o: InitOptions): Record<string, string> {
  return {
    'package.json': packageJson(o),
    '.gitignore': 'node_modules/\n.msgflow/\nreports/\n',
    'tsconfig.json': tsconfigJson(),
    'config.yaml': configYaml(),
    'data/leads.csv': 'phone,name\n79001112233,Alice\n79002223344,Bob\n79003334455,Carol\n',
    'flows/check-leads.yaml': flowYaml(),
    'flows/check-leads.test.yaml': flowTestYaml(),
    'plugins/greet.ts': pluginTs(),
    'README.md': readmeMd(o),
  };
}

function packageJson(o: InitOptions): string {
  return (
    JSON.stringify(
      {
        name: o.name,
        version: '0.1.0',
        private: true,
        // msgflow and its plugins are ES modules.
        type: 'module',
        scripts: {
          validate: 'msgflow validate',
          test: 'msgflow test',
          start: 'msgflow start',
          typecheck: 'tsc --noEmit',
        },
        dependencies: { msgflow: o.msgflowSpec },
        // The plugins' type check: `npx tsc` without them would offer an unrelated package.
        devDependencies: { typescript: o.typescriptSpec, '@types/node': o.typesNodeSpec },
      },
      null,
      2,
    ) + '\n'
  );
}

function tsconfigJson(): string {
  return (
    JSON.stringify(
      {
        // For your editor and `npm run typecheck`: msgflow runs .ts plugins itself (no build step).
        compilerOptions: {
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          // Node's globals (process, Buffer...) for plugins; no other @types package is picked up unasked.
          types: ['node'],
        },
        include: ['plugins'],
      },
      null,
      2,
    ) + '\n'
  );
}

function configYaml(): string {
  return `# msgflow configuration. Secrets come from the environment: \${NAME} or \${NAME:-default}.
instances:
  # msgflow's own local service, in this process: no account needed.
  default:
    apiUrl: local
  # A real instance: set the variables, uncomment, and use \`instance: live\` in a flow.
  # live:
  #   apiUrl: \${MSGFLOW_API_URL}
  #   idInstance: \${MSGFLOW_ID_INSTANCE}
  #   apiTokenInstance: \${MSGFLOW_API_TOKEN}

local:
  port: 7070
  dataDir: .msgflow/local
  network:
    accounts:
      - { phone: 79001112233, name: Alice }
      - { phone: 79002223344, name: Bob }
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: "\${LOCAL_TOKEN:-local-dev-token}"

flowsDir: flows
store:
  driver: lowdb
  dir: .msgflow/state
  # Finished runs older than this are deleted by msgflow start (hourly) with their items and journals.
  retention: 30d
plugins:
  - ./plugins/greet.ts
`;
}

function flowYaml(): string {
  return `# yaml-language-server: $schema=../node_modules/msgflow/schema/flow.schema.json
name: check-leads
description: Which leads have an account? Writes reports/check-leads.csv.
instance: default
on:
  schedule: { cron: "0 9 * * 1-5" }   # weekdays at 09:00 under \`msgflow start\`
env:
  # Your own chat: where failures are reported (set OPERATOR_CHAT, e.g. 79001234567@c.us).
  OPERATOR_CHAT: "\${OPERATOR_CHAT:-79002223344@c.us}"
inputs:
  leads:
    file: data/leads.csv
steps:
  - id: check
    uses: checkAccount.bulk
    with:
      items: \${{ inputs.leads }}
      pause: 2h        # after rate_limit_exceeded, every check of the instance waits
      report: reports/check-leads.csv
    on-failure:        # runs only when the step fails: tell the operator, then the run ends failed
      - id: alert_operator
        uses: sendMessage
        with:
          chatId: \${{ env.OPERATOR_CHAT }}
          message: "check-leads failed: \${{ steps.check.error.message }}"
  - id: greet
    uses: greet.message
    with:
      name: "\${{ steps.check.output.exists }} leads"
`;
}

function flowTestYaml(): string {
  return `# yaml-language-server: $schema=../node_modules/msgflow/schema/flow-test.schema.json
# \`msgflow test\` runs these against the in-process local service on a virtual clock.
cases:
  - name: finds the leads that have an account
    flow: check-leads
    expect:
      status: succeeded
      steps:
        check: { output: { exists: 2, none: 1 } }
        greet: { output: { text: "Hello, 2 leads!" } }
      reports:
        - file: reports/check-leads.csv
          rows:
            - { phone: "79001112233", status: exists }
            - { phone: "79003334455", status: none }

  - name: waits 2 hours when the service says rate_limit_exceeded, then finishes
    flow: check-leads
    faults:
      - { method: checkAccount, call: 2, answer: rate_limit_exceeded, retryAfter: 7200 }
    expect:
      status: succeeded
      elapsed: { atLeast: 2h }
      steps:
        check: { output: { exists: 2, pauses: 1 } }

  - name: tells the operator's chat when the check fails
    flow: check-leads
    faults:
      - { method: checkAccount, call: 1, answer: 401 }
    expect:
      status: failed
      steps:
        check: { status: failed }
        alert_operator: { status: succeeded }
`;
}

function pluginTs(): string {
  return `// A msgflow plugin in TypeScript: msgflow loads .ts plugins directly (no build step).
import { defineAction, definePlugin, z } from 'msgflow';

export const message = defineAction({
  name: 'greet.message',
  description: 'Builds a greeting.',
  input: z.strictObject({ name: z.string().min(1) }),
  output: { description: '{ text }' },
  async run(ctx, input) {
    const text = \`Hello, \${input.name}!\`;
    ctx.logger.info(text);
    return { text };
  },
});

export default definePlugin({ name: 'greet', actions: [message] });
`;
}

function readmeMd(o: InitOptions): string {
  return `# ${o.name}

Message automation with [msgflow](https://github.com/msgflow/msgflow).

\`\`\`sh
npm install
npx msgflow validate        # config.yaml and flows/
npx msgflow test            # flows/*.test.yaml, on a virtual clock
npm run typecheck           # the TypeScript plugins (tsc --noEmit)
npx msgflow run check-leads # run a flow now (against the local service)
npx msgflow start --watch   # run flows on their schedules; reload on edits
\`\`\`

- \`config.yaml\`: instances (\`apiUrl: local\` is msgflow's own local service), store, plugins.
- \`flows/\`: one YAML file per flow, and its tests next to it (\`*.test.yaml\`).
- \`plugins/\`: your own actions, in TypeScript or JavaScript.
- \`data/\`: input files; \`reports/\`: what runs write.
`;
}
