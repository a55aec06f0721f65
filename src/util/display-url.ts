/**
 * How msgflow names a link in its messages: never its query string, fragment
 * or credentials, which may hold access tokens.
 */

/**
 * `https://user:pw@host/a/b.png?sig=abc#x` → `https://host/a/b.png`. Used in
 * every message about a link.
 */
export function displayUrl(url: string | URL): string {
  try {
    const u = typeof url === 'string' ? new URL(url) : url;
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '<invalid URL>';
  }
}
