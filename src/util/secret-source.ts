/**
 * Where `${{ secrets.NAME }}` values come from, looked up in this order:
 *
 * 1. the process environment (`NAME`), so an operator can always override;
 * 2. a `.env`-style file (`secrets.file` in config.yaml), kept outside the
 *    repository, parsed by Node's own `util.parseEnv` (the dotenv format);
 * 3. a directory holding one file per secret (`secrets.dir`, e.g. Docker's
 *    and Kubernetes' `/run/secrets`), the file named `NAME`, its text the
 *    value (one trailing newline dropped).
 *
 * A source never prints a value: {@link SecretSource.describe} names where it
 * looked, for a SECRET_MISSING message.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';

/** Secret names: the same shape as environment variable names. */
export const SECRET_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface SecretSourceOptions {
  /** @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /** Absolute path of a `.env`-style file; absent: none. A missing file counts as empty. */
  file?: string;
  /** Absolute path of a directory with one file per secret; absent: none. */
  dir?: string;
  /** Read the environment. @default true */
  useEnv?: boolean;
}

export class SecretSource {
  private fileValues: Record<string, string> | undefined;

  constructor(private readonly o: SecretSourceOptions = {}) {}

  /** The secret's value, or undefined when no source has it (an empty value counts as unset). */
  get(name: string): string | undefined {
    if (!SECRET_NAME_RE.test(name)) return undefined;
    const env = this.o.useEnv === false ? undefined : (this.o.env ?? process.env)[name];
    if (env) return env;
    const fromFile = this.fromFile()[name];
    if (fromFile) return fromFile;
    return this.fromDir(name);
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** Where the source looks, for messages: `the environment, secrets.file /etc/bot.env, secrets.dir /run/secrets`. */
  describe(): string {
    const where: string[] = [];
    if (this.o.useEnv !== false) where.push('looked in the environment');
    if (this.o.file) where.push(`secrets.file ${this.o.file}`);
    if (this.o.dir) where.push(`secrets.dir ${this.o.dir}`);
    return where.length ? where.join(', ') : 'no secret source is configured';
  }

  private fromFile(): Record<string, string> {
    if (this.fileValues) return this.fileValues;
    const file = this.o.file;
    this.fileValues = file && existsSync(file) ? (parseEnv(readFileSync(file, 'utf8')) as Record<string, string>) : {};
    return this.fileValues;
  }

  private fromDir(name: string): string | undefined {
    if (!this.o.dir) return undefined;
    const file = path.join(this.o.dir, name);
    if (!existsSync(file)) return undefined;
    const text = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    return text === '' ? undefined : text;
  }
}
