/**
 * The YAML a docs page shows, compared with the tested files of the
 * repository: a block must be a part of one of them, as written there.
 */

/** The lines of a YAML text that are not comments or blank, each without a trailing comment. */
export function yamlContent(yaml: string): string {
  return yaml
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'))
    .map((l) => l.replace(/\s+#.*$/, '').trimEnd())
    .join('\n');
}

/** The ```yaml blocks of a Markdown text. */
export function yamlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
}
