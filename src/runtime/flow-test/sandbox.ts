/**
 * The sandbox of a flow test case: a copy-on-write view of the project, and
 * of any other path an action names. The first time an action resolves a
 * path (ctx.resolvePath), what the path holds is copied into the sandbox (a
 * directory with all it contains, symlinks followed), and the action gets
 * the copy's path: reads see the project's files as they are, writes land in
 * the copy. The project is never changed, so running the same test twice
 * gives the same result. Only what is resolved is copied, so a large data
 * folder costs nothing to a test that never names it.
 *
 * `reports/` and `.msgflow/` start empty (a test sees only the reports its
 * run writes, never the project's state). Inside a copied folder,
 * `node_modules` and `.git` are linked rather than copied: code and history,
 * read by a plugin perhaps, written by none.
 */
import { cpSync, existsSync, mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';

/** Folders of a copied directory that are linked, not copied. */
const LINKED = new Set(['node_modules', '.git']);
/** Project folders a case starts without. */
const EMPTY = ['reports', '.msgflow'];

export class ProjectSandbox {
  /** Sandbox paths already copied (or known absent): what lies below them is the sandbox's own. */
  private readonly done = new Set<string>();
  private readonly projectCopy: string;
  private readonly outsideCopy: string;

  /**
   * @param projectDir the project root (the config file's directory)
   * @param dir an empty directory of the case's own
   */
  constructor(
    private readonly projectDir: string,
    dir: string,
  ) {
    this.projectCopy = path.join(dir, 'project');
    this.outsideCopy = path.join(dir, 'outside');
    for (const name of EMPTY) {
      const copy = path.join(this.projectCopy, name);
      mkdirSync(copy, { recursive: true });
      this.done.add(copy);
    }
  }

  /** `p` resolved against `base` (as ctx.resolvePath does), then taken into the sandbox. */
  resolvePath(base: string, p: string): string {
    return this.pathFor(path.resolve(base, p));
  }

  /** The sandbox's copy of an absolute path: the project's under project/, any other under outside/. */
  pathFor(abs: string): string {
    const copy = this.copyPath(abs);
    this.copyOnce(abs, copy);
    return copy;
  }

  /**
   * The sandbox's copy of an absolute path if a run resolved it (it, or a
   * folder holding it) and it exists there: what a test checks a run wrote.
   * Never copies.
   */
  written(abs: string): string | undefined {
    const copy = this.copyPath(abs);
    return this.copied(copy) && existsSync(copy) ? copy : undefined;
  }

  private copyPath(abs: string): string {
    const rel = path.relative(this.projectDir, abs);
    const inProject = rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
    return inProject ? path.join(this.projectCopy, rel) : path.join(this.outsideCopy, abs.slice(path.parse(abs).root.length));
  }

  private copied(copy: string): boolean {
    for (let p = copy; ; p = path.dirname(p)) {
      if (this.done.has(p)) return true;
      if (path.dirname(p) === p) return false;
    }
  }

  /** Copies `real` to `copy` unless it (or a folder holding it) was taken before; what was taken is kept as the test left it. */
  private copyOnce(real: string, copy: string): void {
    if (this.copied(copy)) return;
    mkdirSync(path.dirname(copy), { recursive: true });
    if (existsSync(real)) {
      cpSync(real, copy, {
        recursive: true,
        dereference: true,
        force: false,
        errorOnExist: false,
        filter: (src, dest) => {
          // Taken before, by itself: the test's version stays (even deleted).
          if (dest !== copy && this.done.has(dest)) return false;
          if (src !== real && LINKED.has(path.basename(src))) {
            if (!existsSync(dest)) symlinkSync(src, dest);
            return false;
          }
          return true;
        },
      });
    }
    this.done.add(copy);
  }
}
