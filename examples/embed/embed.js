// Embedding msgflow in your own program or test suite, with package-root imports only.
// Run: node examples/embed/embed.js   (from a project that depends on msgflow, or this checkout)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createClient,
  createDaemon,
  createInProcessTransport,
  createLocalService,
  createRuntime,
  loadConfig,
  runFlowTests,
  VirtualClock,
} from 'msgflow';

const here = path.dirname(fileURLToPath(import.meta.url));
const config = loadConfig(path.join(here, 'config.yaml'));

// 1. The local service in-process, and a typed client on it (no socket).
const clock = new VirtualClock(Date.parse('2026-01-05T09:00:00Z'));
const service = createLocalService(config.local, { baseDir: config.baseDir, clock });
await service.start();
const { idInstance, apiTokenInstance } = config.local.instances[0];
const client = createClient({
  idInstance,
  apiTokenInstance,
  transport: createInProcessTransport(service, idInstance, apiTokenInstance),
  clock,
});
const alice = await client.checkAccount({ phoneNumber: 79001112233 });
console.log(`checkAccount 79001112233: exist=${alice.exist}`);
await service.close();

// 2. The whole runtime (engine, registry with plugins, store) from the config file, and one run of a flow.
//    (createRuntime({ config, command }) takes a config you loaded yourself.)
const runtime = await createRuntime(path.join(here, 'config.yaml'));
try {
  const flow = runtime.flows().flows.find((f) => f.name === 'greet');
  const run = await runtime.engine.start(flow, { inputs: { phone: '79002223344' } });
  const record = await run.done;
  const steps = await runtime.engine.getSteps(record.id);
  console.log(`run ${record.status}: ${steps.find((s) => s.step === 'loud').output.text}`);
} finally {
  await runtime.close();
}

// 3. The daemon of `msgflow start` (schedules, notifications, dashboard...), here without the dashboard
//    and the local service's port; its EngineClient starts a run and follows it to its end.
const daemon = createDaemon({ config, ui: false, listen: false });
try {
  const status = await daemon.start();
  const run = await daemon.client.start('greet', { inputs: { phone: '79001112233' } });
  console.log(`daemon (${status.flows.loaded} flow loaded): run ${(await run.done).status}`);
} finally {
  await daemon.stop();
}

// 4. The flow tests next to the flows, on a virtual clock.
const summary = await runFlowTests({ config });
console.log(`flow tests: ${summary.passed} passed, ${summary.failed} failed`);
process.exitCode = summary.failed === 0 ? 0 : 1;
