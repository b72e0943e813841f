import type { ElementReference, FrameParameters, Operation } from "../protocol";
import type { Gathered } from "./channel";
import { badRequest, jsonPath, RefusedRequest } from "./problems";
import { callVault, type VaultOutcome } from "./vault";

/*
 * A request the page asked for, filled in with the elements' values and sent by the frame to the
 * vault's own API (same origin, the frame's public key). The page chose the shape; the frame makes
 * sure the shape cannot carry a value back to it.
 */

/** The only routes a frame sends values to, relative to its own origin. */
const OPERATION_PATHS: Record<Operation, string> = {
  "tokens.create": "/tokens",
  tokenize: "/tokenize",
  "tokenIntents.create": "/token-intents",
};

/**
 * The members a token request may have when an element's value is in its data. The others (mask,
 * id, search_indexes, fingerprint_expression) are expressions of the data, which the vault's answer
 * to the page would show.
 */
const TOKEN_REQUEST_MEMBERS = new Set(["type", "data", "containers", "metadata", "expires_at", "deduplicate_token"]);

export function isOperation(value: unknown): value is Operation {
  return typeof value === "string" && Object.hasOwn(OPERATION_PATHS, value);
}

/**
 * The shape with each reference's place set to its element's value (or that value's month or year).
 * Each place must be a null the page left in the shape, and in tokens.create, tokenIntents.create, or
 * in a token request of a tokenize payload, it must be within `data`. An element whose value is not complete and valid
 * refuses the whole request, with its error codes by place.
 */
export function fillRequest(
  operation: Operation,
  shape: unknown,
  references: ElementReference[],
  gathered: Map<string, Gathered>,
): unknown {
  if (operation === "tokens.create" && !isTokenRequest(shape)) throw refuse("tokens.create takes a token request: type and data");
  if (operation === "tokenIntents.create" && !isTokenRequest(shape))
    throw refuse("tokenIntents.create takes a token intent request: type and data");
  const errors: Record<string, string[]> = {};
  const places: { parent: Record<string | number, unknown>; member: string | number; value: unknown }[] = [];
  // The shape inside a holder, so that a reference to the whole payload ([]) has a place too.
  const holder = { shape };
  for (const { path, element, part } of references) {
    let node: unknown = holder;
    for (const [index, segment] of ["shape", ...path].entries()) {
      if (isTokenRequest(node)) {
        if (segment !== "data") throw refuse(`${jsonPath(path)}: an element's value may only stand in a token request's data`);
        const others = Object.keys(node).filter((member) => !TOKEN_REQUEST_MEMBERS.has(member));
        if (others.length > 0)
          throw refuse(
            `${jsonPath(path.slice(0, index - 1))}: a token request holding an element's value may not carry ${others.join(", ")}`,
          );
      }
      if (!isPlace(node, segment)) throw refuse(`${jsonPath(path)}: not a place in the request`);
      if (index === path.length) {
        if (node[segment] !== null) throw refuse(`${jsonPath(path)}: not a place in the request`);
        const { value, errors: codes } = gathered.get(element)!;
        if (codes.length > 0) errors[jsonPath(path)] = codes.map(({ field, code }) => `${field}: ${code}`);
        places.push({ parent: node, member: segment, value: part === undefined ? value : partOf(value, part) });
      }
      node = node[segment];
    }
  }
  if (Object.keys(errors).length > 0) {
    throw new RefusedRequest(
      badRequest(
        `The elements' values are not complete and valid: ${Object.entries(errors)
          .map(([place, codes]) => `${place}: ${codes.join(", ")}`)
          .join("; ")}`,
        errors,
      ),
    );
  }
  for (const { parent, member, value } of places) parent[member] = value;
  return holder.shape;
}

export function sendToVault(parameters: FrameParameters, operation: Operation, body: unknown): Promise<VaultOutcome> {
  return callVault(parameters, "POST", OPERATION_PATHS[operation], parameters.key, body);
}

function partOf(value: unknown, part: "month" | "year"): unknown {
  const expiration = value as { expiration_month?: number; expiration_year?: number } | null;
  return part === "month" ? expiration?.expiration_month : expiration?.expiration_year;
}

function isTokenRequest(node: unknown): node is Record<string, unknown> {
  return typeof node === "object" && node !== null && !Array.isArray(node) && Object.hasOwn(node, "type") && Object.hasOwn(node, "data");
}

function isPlace(node: unknown, segment: unknown): node is Record<string | number, unknown> {
  if (typeof node !== "object" || node === null || segment === "__proto__") return false;
  const fits = Array.isArray(node) ? Number.isInteger(segment) : typeof segment === "string";
  return fits && Object.hasOwn(node, segment as string | number);
}

function refuse(detail: string): RefusedRequest {
  return new RefusedRequest(badRequest(detail));
}
