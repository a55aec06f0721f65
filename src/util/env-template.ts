/**
 * `${NAME}` and `${NAME:-default}` in text (config.yaml values, a flow's
 * `env:` values): the one rule for both. A variable that is unset or empty
 * takes the default; with no default it is missing. `${{` starts a flow
 * expression and is left alone.
 */
const ENV_RE = /\$\{(?!\{)([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * `text` with its references replaced. A missing variable is reported to
 * `missing` (which may throw) and left as written.
 *
 * @example expandEnv('${HOST:-localhost}:80', {}, (n) => { throw new Error(n); }) // 'localhost:80'
 */
export function expandEnv(text: string, env: Readonly<Record<string, string | undefined>>, missing: (name: string) => void): string {
  return text.replace(ENV_RE, (whole, name: string, def: string | undefined) => {
    const v = env[name];
    if (v !== undefined && v !== '') return v;
    if (def !== undefined) return def;
    missing(name);
    return whole;
  });
}
