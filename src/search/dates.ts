/** The stretch of time a date or date-time stands for, in epoch milliseconds: [start, end). */
export interface TimeSpan {
  start: number;
  end: number;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?Z?)?$/;

const DAY = 86_400_000;
const MINUTE = 60_000;
const SECOND = 1_000;

/**
 * An ISO 8601 date or UTC date-time. It stands for the whole unit it is written to: a date for its
 * UTC day, a time to the minute for that minute, to the second for that second, with a fraction
 * for that millisecond. Null when the text is not such a date or names no real day or time.
 */
export function timeSpanOf(text: string): TimeSpan | null {
  const match = DATE_TIME.exec(text);
  if (!match) return null;
  const [, year, month, day, hour, minute, second, fraction] = match;
  const parts = [year, month, day, hour ?? "0", minute ?? "0", second ?? "0"].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const milliseconds = fraction === undefined ? 0 : Number(fraction.padEnd(3, "0"));
  const start = Date.UTC(parts[0], parts[1] - 1, parts[2], parts[3], parts[4], parts[5], milliseconds);
  const written = new Date(start);
  const real =
    written.getUTCFullYear() === parts[0] &&
    written.getUTCMonth() === parts[1] - 1 &&
    written.getUTCDate() === parts[2] &&
    written.getUTCHours() === parts[3] &&
    written.getUTCMinutes() === parts[4] &&
    written.getUTCSeconds() === parts[5];
  if (!real) return null;
  const length = hour === undefined ? DAY : second === undefined ? MINUTE : fraction === undefined ? SECOND : 1;
  return { start, end: start + length };
}
