import { fromBase64Url, fromUtf8, toBase64Url, utf8 } from "../crypto/encoding";
import type { TenantKeys } from "../crypto/tenant-keys";
import { ValidationError } from "../errors";
import { CURSOR_MAX_LENGTH } from "../limits";

/*
 * Cursor paging (`start` in, `pagination.next` out): the next page starts after the last row of
 * the one before, in the list's order, newest first by (created_at, id). The position is keyset,
 * never a count of rows to skip, so a deep page reads what the first one does.
 *
 *   cursor  = base64url(iv ‖ AES-256-GCM(tenant's list-cursor key, content) ‖ tag)
 *   content = format (1 byte: 1) ‖ created_at (6 bytes, ms, big-endian) ‖ id (UTF-8)
 *   additional data = "list-cursor/<tenant id>/" ‖ the binding (the list, the application, the request)
 *
 * The client can read nothing in it (an id may be an alias derived from token data) and change
 * nothing: a cursor opens only in the tenant that sealed it, for the same list, application and
 * filters or query. It only says where to resume; every rule of the request is applied again to
 * each page, so it cannot widen what a request finds.
 */

/** Where a page ended: the next page holds the rows after it, (created_at, id) descending. */
export interface KeysetPosition {
  createdAt: number;
  id: string;
}

/** What a cursor continues: a list, for one application, with the request's filters or query as the service read them. */
export interface CursorBinding {
  /** The list, as its route reads (`GET /v2/tokens`). */
  list: string;
  applicationId: string;
  /** The request without its paging members, in a fixed order: the same request gives the same JSON. */
  request: unknown;
}

const FORMAT = 1;
const TIME_BYTES = 6;
const HEADER_BYTES = 1 + TIME_BYTES;
const CURSOR_PATTERN = /^[A-Za-z0-9_-]+$/;

/** The cursor to pass as `start` for the page after `position`. */
export async function cursorAfter(keys: TenantKeys, binding: CursorBinding, position: KeysetPosition): Promise<string> {
  const id = utf8.encode(position.id);
  const content = new Uint8Array(HEADER_BYTES + id.length);
  content[0] = FORMAT;
  const view = new DataView(content.buffer);
  view.setUint16(1, Math.floor(position.createdAt / 2 ** 32));
  view.setUint32(3, position.createdAt % 2 ** 32);
  content.set(id, HEADER_BYTES);
  return toBase64Url(await keys.sealCursor(content, bindingText(binding)));
}

/**
 * The position a cursor resumes after; a 400 naming `start` for anything but a cursor this tenant
 * sealed for the same binding. The one message for every failure: the answer tells nothing about
 * why (forged, altered, another tenant's, another request's).
 */
export async function positionOf(keys: TenantKeys, binding: CursorBinding, cursor: string): Promise<KeysetPosition> {
  const content = isCursorText(cursor) ? await keys.openCursor(fromBase64Url(cursor), bindingText(binding)) : null;
  if (!content || content.length < HEADER_BYTES || content[0] !== FORMAT) {
    throw ValidationError.field(
      "start",
      "is not a cursor of this request: pass the pagination.next of the previous page of the same request",
    );
  }
  const view = new DataView(content.buffer, content.byteOffset, content.byteLength);
  return { createdAt: view.getUint16(1) * 2 ** 32 + view.getUint32(3), id: fromUtf8.decode(content.subarray(HEADER_BYTES)) };
}

/**
 * A page of `size` rows from rows read one beyond it, newest first, and the cursor after its last
 * row when the extra row shows that more follow (the last page has none).
 */
export async function pageAfter<Row extends KeysetPosition>(
  keys: TenantKeys,
  binding: CursorBinding,
  rows: Row[],
  size: number,
): Promise<{ page: Row[]; next: string | undefined }> {
  const page = rows.slice(0, size);
  const last = page.at(-1);
  const more = rows.length > size && last !== undefined;
  return { page, next: more ? await cursorAfter(keys, binding, { createdAt: last.createdAt, id: last.id }) : undefined };
}

/** base64url without padding, of a length that encodes whole bytes, within the limit: anything else is no cursor, decoded or not. */
function isCursorText(cursor: string): boolean {
  return cursor.length <= CURSOR_MAX_LENGTH && cursor.length % 4 !== 1 && CURSOR_PATTERN.test(cursor);
}

function bindingText(binding: CursorBinding): string {
  return JSON.stringify([binding.list, binding.applicationId, binding.request]);
}
