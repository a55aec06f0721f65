/**
 * Intl.DateTimeFormat per zone, made once: making one costs more than a
 * message's send, and its native memory outlives it until a full GC (a
 * campaign's recipient hours made one per recipient and day checked:
 * 560 µs a recipient and 650 MB of RSS over 20,000).
 */

/** What a formatter is for: calendar parts with the 24-hour clock (offsets, dates), the weekday, the day as YYYY-MM-DD. */
export type ZoneFormatKind = 'parts' | 'weekday' | 'day';

const OPTIONS: Record<ZoneFormatKind, [string, Intl.DateTimeFormatOptions]> = {
  parts: [
    'en-US',
    { hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' },
  ],
  weekday: ['en-US', { weekday: 'short' }],
  day: ['en-CA', {}],
};

// cache: a formatter is a function of its kind and zone alone, and the zones in use are few (IANA names; a bad one throws before it is kept)
const formats = new Map<string, Intl.DateTimeFormat>();

/** The formatter of `kind` in `zone`. @throws RangeError for a zone Intl does not know */
export function zoneFormat(kind: ZoneFormatKind, zone: string): Intl.DateTimeFormat {
  const key = `${kind}\n${zone}`;
  let f = formats.get(key);
  if (!f) {
    const [locale, options] = OPTIONS[kind];
    formats.set(key, (f = new Intl.DateTimeFormat(locale, { ...options, timeZone: zone })));
  }
  return f;
}
