/**
 * Recipient time: a broadcast sends to a recipient only within its hours, in
 * the recipient's own time zone, per weekday. The zone is the row's zone
 * column (an IANA name) when it has one, else the one of the number's calling
 * code ({@link zoneOfNumber}), else the given fallback zone. Daily hours are
 * computed by window.ts (Intl, so daylight-saving changes are honoured).
 */
import { z } from 'zod';
import { validateTimezone } from '../engine/schedule/validate.js';
import { resolveWindow } from './window.js';
import { zoneFormat } from '../util/zone-format.js';

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
type Day = (typeof DAYS)[number];
const RANGE = /^([01]?\d|2[0-3]):([0-5]\d)-([01]?\d|2[0-3]):([0-5]\d)$/;

const minutes = (h: string, m: string) => Number(h) * 60 + Number(m);

const hoursText = z
  .string()
  .refine((s) => s === 'off' || RANGE.test(s), { error: "expected 'HH:MM-HH:MM' (start before stop, the recipient's wall clock) or 'off'" })
  .refine(
    (s) => {
      const m = RANGE.exec(s);
      return !m || minutes(m[1]!, m[2]!) < minutes(m[3]!, m[4]!);
    },
    { error: 'the start must be before the stop (hours do not run past midnight)' },
  );

export const RecipientTimeSchema = z
  .strictObject({
    hours: z
      .strictObject(
        Object.fromEntries([...DAYS, 'default'].map((d) => [d, hoursText.optional()])) as Record<
          Day | 'default',
          z.ZodOptional<typeof hoursText>
        >,
      )
      .refine((h) => DAYS.some((d) => (h[d] ?? h.default ?? 'off') !== 'off'), { error: 'no day has hours: nothing could ever be sent' })
      .describe(
        "Sending hours in the recipient's zone, per weekday: `mon`…`sun` and `default` (the days not named), each 'HH:MM-HH:MM' or 'off'. A day neither named nor covered by default is off.",
      ),
    zoneColumn: z
      .string()
      .min(1)
      .default('tz')
      .describe("The row's column holding the recipient's IANA time zone (e.g. Europe/Berlin). @default tz"),
    zone: z
      .string()
      .refine((tz) => validateTimezone(tz) === undefined, { error: 'unknown IANA time zone' })
      .optional()
      .describe(
        "Zone of a recipient whose row has no zone and whose number's calling code is not in the table. @default the machine's zone (a flow test case's zone in msgflow test)",
      ),
  })
  .describe("Quiet hours in the recipient's time zone: { hours, zoneColumn, zone }. A send never happens outside them.");

export type RecipientTime = z.output<typeof RecipientTimeSchema>;

/**
 * Calling code → the zone of most of its numbers. A country spanning several
 * zones gets its most populous one (1: New York, 7: Moscow, 55: São Paulo,
 * 61: Sydney); give a zone column for the others.
 */
const CALLING_CODE_ZONES: Readonly<Record<string, string>> = {
  '1': 'America/New_York',
  '7': 'Europe/Moscow',
  '77': 'Asia/Almaty',
  '20': 'Africa/Cairo',
  '27': 'Africa/Johannesburg',
  '30': 'Europe/Athens',
  '31': 'Europe/Amsterdam',
  '32': 'Europe/Brussels',
  '33': 'Europe/Paris',
  '34': 'Europe/Madrid',
  '36': 'Europe/Budapest',
  '39': 'Europe/Rome',
  '40': 'Europe/Bucharest',
  '41': 'Europe/Zurich',
  '43': 'Europe/Vienna',
  '44': 'Europe/London',
  '45': 'Europe/Copenhagen',
  '46': 'Europe/Stockholm',
  '47': 'Europe/Oslo',
  '48': 'Europe/Warsaw',
  '49': 'Europe/Berlin',
  '52': 'America/Mexico_City',
  '54': 'America/Argentina/Buenos_Aires',
  '55': 'America/Sao_Paulo',
  '56': 'America/Santiago',
  '57': 'America/Bogota',
  '60': 'Asia/Kuala_Lumpur',
  '61': 'Australia/Sydney',
  '62': 'Asia/Jakarta',
  '63': 'Asia/Manila',
  '65': 'Asia/Singapore',
  '66': 'Asia/Bangkok',
  '81': 'Asia/Tokyo',
  '82': 'Asia/Seoul',
  '84': 'Asia/Ho_Chi_Minh',
  '86': 'Asia/Shanghai',
  '90': 'Europe/Istanbul',
  '91': 'Asia/Kolkata',
  '92': 'Asia/Karachi',
  '234': 'Africa/Lagos',
  '254': 'Africa/Nairobi',
  '351': 'Europe/Lisbon',
  '353': 'Europe/Dublin',
  '358': 'Europe/Helsinki',
  '372': 'Europe/Tallinn',
  '374': 'Asia/Yerevan',
  '375': 'Europe/Minsk',
  '380': 'Europe/Kyiv',
  '420': 'Europe/Prague',
  '966': 'Asia/Riyadh',
  '971': 'Asia/Dubai',
  '972': 'Asia/Jerusalem',
  '994': 'Asia/Baku',
  '995': 'Asia/Tbilisi',
  '996': 'Asia/Bishkek',
  '998': 'Asia/Tashkent',
};

/** The zone of a number's calling code (longest code first); undefined when the table does not have it. */
export function zoneOfNumber(digits: string): string | undefined {
  for (let len = 3; len >= 1; len--) {
    const zone = CALLING_CODE_ZONES[digits.slice(0, len)];
    if (zone) return zone;
  }
  return undefined;
}

/** The recipient's zone: its row's column, its number's calling code, the fallback. */
export function recipientZone(rt: RecipientTime, chatId: string, row: Record<string, unknown>, fallback: string): string {
  const col = row[rt.zoneColumn];
  if (typeof col === 'string' && col.trim() !== '' && validateTimezone(col.trim()) === undefined) return col.trim();
  const personal = /^(\d+)@c\.us$/.exec(chatId);
  return (personal && zoneOfNumber(personal[1]!)) ?? rt.zone ?? fallback;
}

const DAY_MS = 24 * 3_600_000;

function weekdayIn(at: number, tz: string): Day {
  const name = zoneFormat('weekday', tz).format(new Date(at)).toLowerCase();
  return name.slice(0, 3) as Day;
}

/**
 * When the recipient may be sent to, from `now`: `now` itself within its
 * hours, else the start of its next hours (within a week: the schema makes
 * sure some day has hours). No recipient time: `now`.
 */
export function recipientOpening(
  rt: RecipientTime | undefined,
  chatId: string,
  row: Record<string, unknown>,
  now: number,
  clockZone: string,
): number {
  if (!rt) return now;
  const tz = recipientZone(rt, chatId, row, clockZone);
  for (let d = 0; d <= 7; d++) {
    const day = now + d * DAY_MS;
    const hours = rt.hours[weekdayIn(day, tz)] ?? rt.hours.default ?? 'off';
    const m = RANGE.exec(hours);
    if (!m) continue;
    const w = resolveWindow({ start: `${m[1]}:${m[2]}`, stop: `${m[3]}:${m[4]}`, timezone: tz }, day, tz);
    if (now >= w.stopAt!) continue;
    return Math.max(now, w.startAt!);
  }
  // Unreachable with a schema-checked value (some day has hours): never earlier than a week out.
  return now + 7 * DAY_MS;
}
