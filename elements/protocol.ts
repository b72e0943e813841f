import type { CardBrand, FieldError } from "./frame/cards";
import type { Style } from "./frame/styles";

/*
 * What the merchant's page (elements.js) and the frames say to each other, and the frames of one
 * init among themselves. Page and frame talk by postMessage, each checking the other's origin and
 * window. Frames gather values on a BroadcastChannel, which only pages of the vault's origin can
 * join. No message asks a frame for its value: the page sends a request's shape with references to
 * elements, and the frames fill the values in and send it to the vault themselves.
 */

export const ELEMENT_KINDS = ["card", "cardNumber", "cardExpirationDate", "cardVerificationCode", "text"] as const;
export type ElementKind = (typeof ELEMENT_KINDS)[number];

/** What the vault accepts as HEADER_PREFIX (src/env.ts): the frames send the key in `<prefix>-API-KEY`. */
export const HEADER_PREFIX_PATTERN = /^[A-Za-z][A-Za-z0-9]{0,19}$/;

/** The frame page on the vault's origin; its query carries the FrameParameters but `prefix`, its fragment the options. */
export const FRAME_PATH = "/elements/v1/frame";

/**
 * What a frame learns from its URL, and `prefix` from its page (the vault writes its HEADER_PREFIX
 * there). `key` and `prefix` say how it calls the vault; `channel` (random per init) which frames it
 * gathers values with; `origin` the only page it talks to.
 */
export interface FrameParameters {
  kind: ElementKind;
  element: string;
  key: string;
  prefix: string;
  channel: string;
  origin: string;
}

export interface ElementOptions {
  style?: Style;
  placeholder?: string;
  /** The input's accessible name (and the iframe's title); each kind has a default. */
  label?: string;
  readOnly?: boolean;
  disabled?: boolean;
  /** A button in the frame that copies the shown value to the clipboard (text elements). */
  copy?: boolean;
}

export type Operation = "tokens.create" | "tokenize" | "tokenIntents.create";

/**
 * The requests that reveal: `sessions.create` (POST /sessions with the init's public key), whose
 * session key stays in the frame that sent it, and `tokens.retrieve` (`{id, session}`: GET /tokens/{id}
 * with the key that frame holds for the session's handle), whose answer reaches the page with each
 * data leaf replaced by a reference only a frame can resolve.
 */
export type RevealOperation = "sessions.create" | "tokens.retrieve";

/**
 * What the page gets of a session: never its key. Once the merchant's server authorizes the nonce,
 * the key reads tokens; it stays in the frame, and `handle` (random, meaningless to any other frame)
 * names it to that frame.
 */
export interface PageSession {
  handle: string;
  nonce: string;
  expiresAt: string;
}

/** How page and frame refuse a `tokens.retrieve` without a session of `sessions.create`, such as one with the former `{ apiKey }`. */
export const RETRIEVE_TAKES_A_SESSION =
  "tokens.retrieve(id, { session }) takes a session of vault.sessions.create(), not { apiKey }: " +
  "the session key stays in the frame that created the session";

/** What the page holds in place of a revealed value: `tvref_` and 32 random hex digits. */
export const REFERENCE_PATTERN = /^tvref_[0-9a-f]{32}$/;

/** Where in a request's shape an element's value goes: its whole value, or the month or year of an expiration date. */
export interface ElementReference {
  path: (string | number)[];
  element: string;
  part?: "month" | "year";
}

/** The page → frame messages. */
export type PageMessage =
  | { type: "update"; options: ElementOptions }
  | { type: "clear" }
  | { type: "focus" }
  | { type: "blur" }
  | { type: "submit"; id: number; operation: Operation | RevealOperation; body: unknown; references: ElementReference[] }
  /** Shows the value of a reference in a read-only text element; answered with a `result`, never the value. */
  | { type: "setValue"; id: number; reference: string };

/** What `change` tells the page: never a typed value, only its state and the card's public facts. */
export interface ChangeEvent {
  elementType: ElementKind;
  empty: boolean;
  complete: boolean;
  /** No error but `incomplete`: what was typed so far can still become complete. */
  valid: boolean;
  errors: FieldError[];
  cardBrand?: CardBrand | "unknown";
  /** The first six digits and the last four, only once the number is complete and valid. */
  cardBin?: string;
  cardLast4?: string;
}

/** An RFC 7807 problem, as the vault answers it (or as a frame refuses a request before sending it). */
export interface Problem {
  type?: string;
  title: string;
  status: number;
  detail: string;
  errors?: Record<string, string[]>;
}

/** The frame → page messages. */
export type FrameMessage =
  | { type: "ready" }
  | { type: "change"; change: ChangeEvent }
  | { type: "focus" }
  | { type: "blur" }
  | { type: "resize"; height: number }
  | { type: "result"; id: number; ok: true; body: unknown }
  | { type: "result"; id: number; ok: false; problem: Problem };

/**
 * The messages between the frames of one init. `gather` asks the frames of the named elements for
 * their values on behalf of a request the asking frame sends to the vault; each answers `value` (or
 * the errors that keep it from being sent; a text frame showing a revealed value never gives it). `brand` lets a security code frame follow the brand of
 * the number typed in another frame, and `brand?` asks for it.
 */
export type ChannelMessage =
  | { type: "gather"; id: string; key: string; elements: string[] }
  | { type: "value"; id: string; element: string; value: unknown; errors: FieldError[] }
  | { type: "brand"; brand: CardBrand | undefined }
  | { type: "brand?" }
  /** A read-only text frame asks for a reference's value; the frame that retrieved the token answers `resolved`. */
  | { type: "resolve"; id: string; key: string; reference: string }
  | { type: "resolved"; id: string; value: unknown };

export function channelName(channel: string): string {
  return `token-vault-elements/${channel}`;
}

/** 128 random bits in hex: crypto.randomUUID needs a secure context, which a merchant's page may not be. */
export function randomHex(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("");
}
