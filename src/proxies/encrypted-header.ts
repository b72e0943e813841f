import { accessTo, type Principal } from "../auth/access";
import { encryptedDataOpener } from "../client-keys/service";
import type { TenantContext } from "../context";
import { fromBase64Url } from "../crypto/encoding";
import { addFieldError, type FieldErrors, ForbiddenError, ValidationError } from "../errors";
import { jsonDepthOf, MAX_JSON_DEPTH, utf8TextOf } from "../http/body";
import { PROXIES } from "../limits";
import { dataRefusals } from "../tokens/schema";
import { holdsCardNumber, isTokenType, TOKEN_TYPE_RULES, TOKEN_TYPES, type TokenType } from "../tokens/types";

/*
 * `{P}-ENCRYPTED`: data encrypted on the client travels with a proxy call, not through a token. The
 * header is base64 of a token request whose `encrypted` is a JWE to one of the tenant's client
 * encryption keys, `{"type": "card", "encrypted": "<JWE>"}`, or of an object of such requests by
 * name. Each JWE is opened as POST /tokens opens one (src/client-keys/), its plaintext checked
 * against the type's rules, and the body reads the result as `encrypted`: `{type, data}`, or
 * `{name: {type, data}}` (docs/proxies.md, "Client-encrypted data").
 */

/** What `{{ encrypted … }}` reads: the decrypted token request(s), as the header arranged them. */
export type EncryptedRequests = Record<string, unknown>;

interface EncryptedRequest {
  type: string;
  encrypted: unknown;
}

const isRequest = (value: unknown): value is EncryptedRequest =>
  value !== null && typeof value === "object" && !Array.isArray(value) && "type" in value && "encrypted" in value;

/**
 * The header's requests decrypted, or null without the header. Only for a caller acting for itself:
 * an open proxy's anonymous partner would have the tenant's key decrypt whatever JWE it replays, for
 * a destination that may echo it. Every refusal names the header's member and never its data; the
 * whole header is refused before anything is forwarded.
 */
export async function encryptedRequestsOf(
  context: TenantContext,
  request: Request,
  caller: Principal | null,
  forCaller: boolean,
): Promise<EncryptedRequests | null> {
  const { config } = context;
  const headerName = config.headers.encrypted;
  const value = request.headers.get(headerName);
  if (value === null) return null;
  if (!forCaller || caller === null) {
    throw new ForbiddenError(
      `The ${config.HEADER_PREFIX}-ENCRYPTED header needs a caller with an API key: an open proxy does not decrypt for its partners`,
    );
  }
  const field = `headers.${headerName}`;
  const parsed: Record<string, unknown> = parseHeader(value, field);
  const single = isRequest(parsed);
  const named = single ? { "": parsed } : parsed;
  const entries = Object.entries(named);
  if (entries.length === 0) throw ValidationError.field(field, "must be a token request {type, encrypted} or an object of them by name");
  if (entries.length > PROXIES.maxEncryptedRequests) {
    throw ValidationError.field(
      field,
      `holds ${entries.length} token requests; at most ${PROXIES.maxEncryptedRequests} are decrypted in one call`,
    );
  }
  const errors: FieldErrors = {};
  const at = (name: string, member: string) => [field, name, member].filter(Boolean).join(".");
  for (const [name, entry] of entries) {
    if (!isRequest(entry)) addFieldError(errors, at(name, ""), "must be a token request {type, encrypted}");
    else if (typeof entry.type !== "string" || !isTokenType(entry.type))
      addFieldError(errors, at(name, "type"), `must be one of ${TOKEN_TYPES.join(", ")}`);
  }
  if (Object.keys(errors).length > 0) throw ValidationError.summarised(`${field} is not a token request of JWEs`, errors);
  for (const [, entry] of entries) requireRevealed(caller, (entry as EncryptedRequest).type as TokenType);

  const open = encryptedDataOpener(context);
  const opened = await Promise.all(
    entries.map(async ([name, entry]) => {
      const { type, encrypted } = entry as EncryptedRequest & { type: TokenType };
      const result = await open(encrypted);
      if ("refusal" in result) addFieldError(errors, at(name, "encrypted"), result.refusal);
      else if (result.data === encrypted) addFieldError(errors, at(name, "encrypted"), "must be a JWE (compact serialization)");
      else for (const { path, message } of dataRefusals(type, result.data)) addFieldError(errors, at(name, path.join(".")), message);
      return [name, { type, data: "data" in result ? result.data : null }] as const;
    }),
  );
  if (Object.keys(errors).length > 0) throw ValidationError.summarised(`${field} could not be decrypted`, errors);
  for (const [, request] of opened) requireCardsRevealed(caller, request.type, request.data);
  for (const [, request] of opened) context.revealed.add(request.data);
  return single ? opened[0]![1] : Object.fromEntries(opened);
}

/**
 * Decrypted data is used as the caller's own token of its type would be: it needs `token:use` under
 * `reveal` on the type's container (`/pci/high/` for a card). A caller whose rule there masks or
 * redacts, or that may use only other containers, may not have the vault decrypt it (403).
 */
function requireRevealed(caller: Principal, type: TokenType): void {
  const { container } = TOKEN_TYPE_RULES[type];
  if (accessTo(caller, "token:use", [container]) !== "reveal") {
    throw new ForbiddenError(`token:use with reveal on container ${container} is needed to use client-encrypted data of type ${type}`);
  }
}

const CARD_CONTAINER = TOKEN_TYPE_RULES.card_number.container;

/**
 * The type is the caller's word, not the client's: the JWE's plaintext carries no type. Data holding
 * a card number needs reveal on the cards' container whatever type it is sent as, or a caller that
 * may reveal only `/general/` would send a browser's card as type `token` to a destination of its
 * own (docs/decisions.md, "Client encryption keys").
 */
function requireCardsRevealed(caller: Principal, type: TokenType, data: unknown): void {
  if (TOKEN_TYPE_RULES[type].container === CARD_CONTAINER || !holdsCardNumber(data)) return;
  if (accessTo(caller, "token:use", [CARD_CONTAINER]) !== "reveal") {
    throw new ForbiddenError(
      `Client-encrypted data sent as type ${type} holds a card number: token:use with reveal on container ${CARD_CONTAINER} is needed to use it`,
    );
  }
}

/** The header's JSON: base64 (standard or URL-safe) of UTF-8 text, nested no deeper than a body may. */
function parseHeader(value: string, field: string): Record<string, unknown> {
  let bytes: Uint8Array;
  try {
    bytes = fromBase64Url(value.trim());
  } catch {
    throw ValidationError.field(field, "must be base64");
  }
  const text = utf8TextOf(bytes);
  if (text === null || jsonDepthOf(bytes, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw ValidationError.field(field, "must be base64 of JSON");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw ValidationError.field(field, "must be base64 of JSON");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw ValidationError.field(field, "must be a token request {type, encrypted} or an object of them by name");
  }
  return parsed as Record<string, unknown>;
}
