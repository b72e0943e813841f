import { REACTORS } from "../limits";

/** Largest icon accepted, in decoded bytes: enough for a crisp 128×128 PNG, small enough to list. */
export const ICON_MAX_BYTES = REACTORS.iconMaxBytes;

/** Whitespace after the comma is skipped: the original reactor formulas page writes its icons that way. */
const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*),\s*(.*)$/is;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const PNG_IHDR = [0x49, 0x48, 0x44, 0x52];
const PNG_IEND = [0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];

const bytesAt = (bytes: Uint8Array, offset: number, expected: number[]) =>
  offset >= 0 && expected.every((byte, i) => bytes[offset + i] === byte);

/** A PNG starts with its signature and IHDR chunk and ends with IEND; a JPEG starts with SOI and ends with EOI. */
const isPng = (bytes: Uint8Array) =>
  bytesAt(bytes, 0, PNG_SIGNATURE) && bytesAt(bytes, 12, PNG_IHDR) && bytesAt(bytes, bytes.length - 8, PNG_IEND);
const isJpeg = (bytes: Uint8Array) => bytesAt(bytes, 0, [0xff, 0xd8, 0xff]) && bytesAt(bytes, bytes.length - 2, [0xff, 0xd9]);

const RECOGNISERS: Record<string, (bytes: Uint8Array) => boolean> = {
  "image/png": isPng,
  "image/jpeg": isJpeg,
  "image/jpg": isJpeg,
};

export const ICON_MEDIA_TYPES = Object.keys(RECOGNISERS);

/**
 * Why the icon cannot be accepted, or null when it is a base64 data URL of a PNG or JPEG whose
 * bytes really are that image: a label is not enough, since icons are rendered by dashboards.
 */
export function iconProblem(icon: string): string | null {
  const match = DATA_URL.exec(icon);
  if (!match) return "must be a data URL (data:image/png;base64,...)";
  const mediaType = match[1]!.toLowerCase();
  const recognise = RECOGNISERS[mediaType];
  if (!recognise) return `must be an image of type ${ICON_MEDIA_TYPES.join(", ")}, not ${mediaType || "unspecified"}`;
  if (!match[2]!.toLowerCase().split(";").includes("base64")) return "must be base64 encoded (;base64,)";
  const encoded = match[3]!;
  if (encoded.length > Math.ceil(ICON_MAX_BYTES / 3) * 4) return `must be at most ${ICON_MAX_BYTES} bytes once decoded`;
  const bytes = decodeBase64(encoded);
  if (!bytes) return "holds invalid base64";
  if (bytes.length > ICON_MAX_BYTES) return `must be at most ${ICON_MAX_BYTES} bytes once decoded`;
  if (!recognise(bytes)) return `holds bytes that are not a complete ${mediaType} image`;
  return null;
}

function decodeBase64(text: string): Uint8Array | null {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return null;
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
}
