/**
 * The simulated messenger network the tests share: who has an account, with
 * which username and name. One cast, so a number means the same person in
 * every test (79009990000-range numbers have no account anywhere).
 */

export interface Account {
  phone: number;
  username?: string;
  name?: string;
  /** On the messenger but hides it from checkAccount. */
  hidden?: boolean;
}

export const ACCOUNTS: readonly Account[] = [
  { phone: 79001112233, username: '@alice', name: 'Alice' },
  { phone: 79002223344, username: '@bob', name: 'Bob' },
  { phone: 79003334455, name: 'Carol' },
  { phone: 79004445566, username: '@dave', name: 'Dave' },
  { phone: 79005550000, username: '@ghost', hidden: true },
  { phone: 79006660001, name: 'Erin' },
  { phone: 79006660002, name: 'Frank' },
  { phone: 79006660003, name: 'Grace' },
];

/** When a sent message turns delivered and read; left out, the service's defaults apply. */
export interface NetworkTiming {
  deliveredAfterMs?: number;
  readAfterMs?: number;
}

/** `local.network` of a config, as an object (for LocalSchema.parse). */
export function network(timing: NetworkTiming = {}, accounts: readonly Account[] = ACCOUNTS) {
  return { accounts: accounts.map((a) => ({ ...a })), ...timing };
}

/** `network:` of a config.yaml's `local:` section, indented by `indent`. */
export function networkYaml(indent: string, timing: NetworkTiming = {}, accounts: readonly Account[] = ACCOUNTS): string {
  const n = network({}, accounts);
  const entry = (a: Account) =>
    `${indent}    - { ${Object.entries(a)
      .map(([k, v]) => `${k}: ${typeof v === 'string' ? JSON.stringify(v) : v}`)
      .join(', ')} }`;
  const times = Object.entries(timing).map(([k, v]) => `${indent}  ${k}: ${v}`);
  return [`${indent}network:`, `${indent}  accounts:`, ...n.accounts.map(entry), ...times].join('\n');
}
