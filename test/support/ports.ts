/**
 * A TCP port free on 127.0.0.1 right now, for a server a test configures by
 * port (config.yaml's local.port) rather than one that listens on 0: the
 * port must be known before the service starts, since `local.url` (e.g. a
 * brochure's link in a flow) names it.
 */
import net from 'node:net';

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}
