import { z } from "@hono/zod-openapi";

/*
 * The date-times a request may carry: ISO 8601 with a time zone, and the form the original docs write
 * token expiries in, `8/26/2030 7:23:57 PM -07:00` (.NET's general date-time with its offset). Both
 * are read strictly, field by field: `new Date(text)` would guess at anything ("2099", "tomorrow"
 * in some engines), and a guessed expiry is a token that lives longer or shorter than asked.
 */

const IsoDateTime = z.iso.datetime({ offset: true });

/** M/D/YYYY h:mm:ss AM|PM ±HH:MM; month, day and hour without a leading zero or with one. */
const DOCS_FORM = /^(\d{1,2})\/(\d{1,2})\/(\d{4}) (\d{1,2}):(\d{2}):(\d{2}) (AM|PM) ([+-])(\d{2}):(\d{2})$/;

/** Offsets run from -12:00 to +14:00 in practice; anything past 14 hours is not an offset. */
const MAX_OFFSET_MINUTES = 14 * 60;

/** The instant the text names, in milliseconds since the epoch; null when it is not one of the two forms. */
export function parseDateTime(text: string): number | null {
  if (IsoDateTime.safeParse(text).success) return Date.parse(text);
  const fields = DOCS_FORM.exec(text);
  if (!fields) return null;
  const [month, day, year, hour, minute, second] = fields.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const [meridiem, sign, offsetHours, offsetMinutes] = [fields[7], fields[8], Number(fields[9]), Number(fields[10])];
  if (hour < 1 || hour > 12 || minute > 59 || second > 59 || offsetMinutes > 59) return null;
  const offset = (sign === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  if (Math.abs(offset) > MAX_OFFSET_MINUTES) return null;
  const hours = (hour % 12) + (meridiem === "PM" ? 12 : 0);
  const local = Date.UTC(year, month - 1, day, hours, minute, second);
  // Date.UTC rolls 2/30 over into March: only a day that exists comes back as written.
  const date = new Date(local);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return local - offset * 60_000;
}

export const DATE_TIME_FORMS = "an ISO 8601 date-time with a time zone, e.g. 2030-01-01T00:00:00Z, or M/D/YYYY h:mm:ss AM|PM ±HH:MM";
