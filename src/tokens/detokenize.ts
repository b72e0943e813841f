import type { Principal } from "../auth/access";
import type { Bindings } from "../env";
import { ForbiddenError, ValidationError, type FieldErrors } from "../http/problem";
import { fieldPath } from "../http/validation";
import { useTokens } from "./service";

/** More references than this in one request is refused: each one is a decryption. */
export const MAX_REFERENCES = 100;

const EXPRESSION = /\{\{([\s\S]*?)\}\}/g;
const TOKEN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const WHOLE_REFERENCE = /^\{\{\s*([0-9a-f-]{36})\s*\}\}$/i;
const EXPRESSION_ECHO_LIMIT = 60;

/**
 * Replaces every `{{ <token_id> }}` inside the strings of a JSON value with the token's data, as
 * the principal may use it (`token:use`). Inside a string the data is inserted as text, so the JSON
 * escaping happens when the value is serialised again; a string that is exactly one reference to a
 * token whose data is an object or array becomes that value. Object keys are left alone.
 *
 * Text (a non-JSON body, a header value) is a JSON string like any other, so the proxy detokenizes
 * its body and headers in one call, with one token lookup.
 *
 * `principal` null means nobody may detokenize: a value holding references is refused with 403.
 * Errors name the JSON path of the string, under `root`.
 */
export async function detokenizeJson(
  env: Bindings,
  principal: Principal | null,
  value: unknown,
  root = "body",
): Promise<unknown> {
  const ids = collectReferences(value, root);
  if (ids.length === 0) return value;
  const data = await reveal(env, principal, ids);
  return substitute(value, data);
}

/** Every token id referenced in the value, lower-cased; refuses invalid expressions and too many references. */
function collectReferences(value: unknown, root: string): string[] {
  const ids: string[] = [];
  const errors: FieldErrors = {};
  walkStrings(value, [], (text, path) => {
    if (!text.includes("{{")) return;
    for (const [expression, inside] of text.matchAll(EXPRESSION)) {
      const id = inside!.trim();
      if (TOKEN_ID.test(id)) ids.push(id.toLowerCase());
      else (errors[fieldPath(path, root)] ??= []).push(`invalid detokenization expression ${echo(expression)}`);
    }
  });
  if (Object.keys(errors).length > 0) {
    throw new ValidationError("Invalid detokenization expression: a reference must be {{ <token id> }}", errors);
  }
  if (ids.length > MAX_REFERENCES) {
    throw new ValidationError(`At most ${MAX_REFERENCES} token references are allowed in one request; found ${ids.length}`);
  }
  return ids;
}

async function reveal(env: Bindings, principal: Principal | null, ids: string[]): Promise<Map<string, unknown>> {
  if (principal === null) {
    throw new ForbiddenError("Token references cannot be detokenized here: no application may use tokens for this request");
  }
  return useTokens(env, principal, [...new Set(ids)]);
}

/** Visits every string with its path; the path array is reused, so `visit` must not keep it. */
function walkStrings(value: unknown, path: PropertyKey[], visit: (text: string, path: PropertyKey[]) => void): void {
  if (typeof value === "string") return visit(value, path);
  if (value === null || typeof value !== "object") return;
  const entries: [PropertyKey, unknown][] = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
  for (const [key, item] of entries) {
    path.push(key);
    walkStrings(item, path, visit);
    path.pop();
  }
}

function substitute(value: unknown, data: Map<string, unknown>): unknown {
  if (typeof value === "string") {
    if (!value.includes("{{")) return value;
    const whole = WHOLE_REFERENCE.exec(value);
    const revealed = whole ? data.get(whole[1]!.toLowerCase()) : undefined;
    if (revealed !== null && typeof revealed === "object") return revealed;
    return insertData(value, data);
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, data));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, data)]));
  }
  return value;
}

function insertData(text: string, data: Map<string, unknown>): string {
  return text.replace(EXPRESSION, (_expression, inside: string) => {
    const revealed = data.get(inside.trim().toLowerCase());
    return typeof revealed === "string" ? revealed : JSON.stringify(revealed);
  });
}

function echo(expression: string): string {
  return expression.length <= EXPRESSION_ECHO_LIMIT ? expression : `${expression.slice(0, EXPRESSION_ECHO_LIMIT)}…`;
}
