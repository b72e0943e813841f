/**
 * Random text that a check for a short piece of data could match by chance: a UUID holds any given
 * three hex digits about one time in 200. Tests that look for a few digits take these out first.
 */
const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** The text with every UUID (request, token, event and entry ids) replaced by `<id>`. */
export function withoutIds(text: string): string {
  return text.replace(UUIDS, "<id>");
}
