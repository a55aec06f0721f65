/**
 * The value parsers of a transition's `expect:`: each reads the message's
 * text and gives the value (`value` in the transition's `set:`), or
 * undefined when the text is not one. `phone` is the phone rule of the
 * built-in jobs (actions/phone.ts), handed in by the runtime, which owns it.
 */
import type { Validator } from './schema.js';

/** A parser per validator: the value, or undefined when the text does not hold one. */
export type ValueParsers = Record<Validator, (text: string) => unknown>;

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@.]{2,}$/;

/** A number: digits with an optional sign and decimal point or comma (`12`, `-3.5`, `2,5`). */
function parseNumber(text: string): number | undefined {
  const t = text.replace(/\s+/g, '').replace(',', '.');
  return /^[-+]?\d+(\.\d+)?$/.test(t) ? Number(t) : undefined;
}

/** A calendar date as YYYY-MM-DD, from `2026-01-31`, `31.01.2026` or `31/01/2026`; undefined for a day that does not exist. */
function parseDate(text: string): string | undefined {
  const t = text.trim();
  const iso = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(t);
  const dmy = /^(\d{1,2})[./](\d{1,2})[./](\d{4})$/.exec(t);
  const [y, m, d] = iso ? [iso[1], iso[2], iso[3]] : dmy ? [dmy[3], dmy[2], dmy[1]] : [];
  if (y === undefined) return undefined;
  const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  if (date.getUTCFullYear() !== Number(y) || date.getUTCMonth() !== Number(m) - 1 || date.getUTCDate() !== Number(d)) return undefined;
  return date.toISOString().slice(0, 10);
}

/** The parsers msgflow's engine owns; `phone` comes from the caller. */
export function valueParsers(phone: (text: string) => unknown): ValueParsers {
  return {
    number: parseNumber,
    email: (t) => (EMAIL_RE.test(t.trim()) ? t.trim().toLowerCase() : undefined),
    date: parseDate,
    phone,
    text: (t) => (t.trim() === '' ? undefined : t.trim()),
  };
}

/** The value `expect: kind` reads from the text, or undefined (no text, or not one). */
export function parseValue(parsers: ValueParsers, kind: Validator, text: string | undefined): unknown {
  return text === undefined ? undefined : parsers[kind](text);
}
