/**
 * Which non-public range an IP address is in (loopback, private, link-local,
 * unspecified, multicast): the one rule for what msgflow refuses to reach
 * unless told to (the local service's urlFile fetches, the http.request
 * action), and for what counts as a loopback bind.
 */
import dns, { type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/** Address ranges msgflow does not reach unless allowed (local.fetch.allowPrivate, http.request's allowPrivate). */
const RANGES: [range: string, net: string, prefix: number, family: 'ipv4' | 'ipv6'][] = [
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['loopback', '::1', 128, 'ipv6'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['private', '100.64.0.0', 10, 'ipv4'],
  ['private', 'fc00::', 7, 'ipv6'],
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['multicast or reserved', '224.0.0.0', 3, 'ipv4'],
  ['multicast', 'ff00::', 8, 'ipv6'],
];
/** One BlockList per range name, built once from RANGES and only read after. */
const BLOCKED: ReadonlyMap<string, BlockList> = blockLists();

function blockLists(): Map<string, BlockList> {
  const lists = new Map<string, BlockList>();
  for (const [range, net, prefix, family] of RANGES) {
    let list = lists.get(range);
    if (!list) lists.set(range, (list = new BlockList()));
    list.addSubnet(net, prefix, family);
  }
  return lists;
}

/** The name of the non-public range `address` is in, or undefined for a public address. */
export function privateRange(address: string): string | undefined {
  let a = address.replace(/^\[|\]$/g, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  if (mapped) a = mapped[1]!;
  const version = isIP(a);
  if (version === 0) return undefined;
  const family = version === 6 ? 'ipv6' : 'ipv4';
  for (const [range, list] of BLOCKED) if (list.check(a, family)) return range;
  return undefined;
}

/** A `dns.lookup`-shaped function, as node:net, got and undici's connectors take it. */
export type LookupFn = (hostname: string, options: LookupOptions, callback: (...args: unknown[]) => void) => void;

/**
 * `dns.lookup` that checks every address a host name resolves to before a
 * connection is made to any: `refuse(hostname, address)` returns the error to
 * fail with (a private address), or undefined to let it through. Checking the
 * resolved addresses, not the name, is what stops a public name pointing at
 * 127.0.0.1 (DNS rebinding included: the connection uses the address checked).
 */
export function guardedLookup(refuse: (hostname: string, address: string) => Error | undefined): LookupFn {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err);
      for (const a of addresses) {
        const refused = refuse(hostname, a.address);
        if (refused) return callback(refused);
      }
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Which private hosts may be reached anyway (config.yaml's `http.allowPrivate`). */
export interface PrivateAllowance {
  /** Every private address may be reached. */
  readonly all: boolean;
  /** `host` (as written in the URL, lower case) resolving to `address` may be reached. */
  allows(host: string, address: string): boolean;
}

/**
 * The allowance of `true` (all), `false` (none), or a list whose entries are
 * host names (matched as written in the URL, case-insensitive), IP addresses
 * or CIDR ranges (`10.1.0.0/16`, `fd00::/8`).
 * @throws Error naming the entry when a range is not a valid CIDR.
 */
export function privateAllowance(spec: boolean | readonly string[]): PrivateAllowance {
  if (typeof spec === 'boolean') return { all: spec, allows: () => spec };
  const hosts = new Set<string>();
  const nets = new BlockList();
  for (const entry of spec) {
    const [net, bits] = entry.split('/');
    const version = isIP(net!);
    if (version === 0 && bits === undefined) hosts.add(entry.toLowerCase());
    else if (version === 0) throw new Error(`'${entry}' is neither a host name, an IP address nor a CIDR range`);
    else {
      const family = version === 6 ? 'ipv6' : 'ipv4';
      const prefix = bits === undefined ? (version === 6 ? 128 : 32) : Number(bits);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > (version === 6 ? 128 : 32))
        throw new Error(`'${entry}' has an invalid prefix length`);
      nets.addSubnet(net!, prefix, family);
    }
  }
  return {
    all: false,
    allows(host, address) {
      if (hosts.has(host.toLowerCase())) return true;
      const a = address.replace(/^\[|\]$/g, '');
      const version = isIP(a);
      return version !== 0 && nets.check(a, version === 6 ? 'ipv6' : 'ipv4');
    },
  };
}
