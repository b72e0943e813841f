import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from "../errors";
import { BODY } from "../limits";
import { checkBodyText } from "./body";
import type { AppEnv } from "./context";

/** For reads that may come from the nearest replica (list, get, search): see TenantContext.allowStaleReads. */
export const staleReadsAllowed: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.var.context.allowStaleReads();
  await next();
};

/**
 * A request that carries a body must send it in one of the accepted media types (415 otherwise),
 * as valid UTF-8 and, for JSON, nested no deeper than the one bound (400 otherwise). Every route
 * that reads a body has this gate, after authentication and the permission check. A bodiless
 * request passes, and the body schema then reports the missing fields.
 */
export function requireContentType(...accepted: string[]): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const mediaType = c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase();
    if ((hasBody(c) || mediaType) && !accepted.includes(mediaType ?? "")) throw new UnsupportedMediaTypeError(accepted);
    if (c.req.raw.body !== null) checkBodyText(new Uint8Array(await c.req.arrayBuffer()), mediaType ?? "");
    await next();
  };
}

/**
 * For routes whose JSON body may be left out: an empty request is read as `{}` whatever content
 * type it names (the JS SDK posts an empty regenerateKey with a form content type), so its content
 * type is dropped before the validators see it; a request with a body must be JSON.
 */
export function optionalJson(): MiddlewareHandler<AppEnv> {
  const json = requireContentType("application/json");
  return async (c, next) => {
    if (!hasBody(c) && c.req.header("content-type") !== undefined) {
      const headers = new Headers(c.req.raw.headers);
      headers.delete("content-type");
      c.req.raw = new Request(c.req.raw, { headers });
    }
    await json(c, next);
  };
}

/** A body over BODY.maxBytes is a 413 before it is read: the API's and /proxy's one wiring. */
export const limitBody: MiddlewareHandler<AppEnv> = bodyLimit({
  maxSize: BODY.maxBytes,
  onError: () => {
    throw new PayloadTooLargeError(BODY.maxBytes);
  },
});

/** For routes that accept any JSON (tokenize, detokenize): an absent body would otherwise read as `{}`. */
export const requireBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!hasBody(c)) throw ValidationError.field("body", "is required");
  await next();
};

function hasBody(c: Context<AppEnv>): boolean {
  return Number(c.req.header("content-length") ?? 0) > 0 || c.req.header("transfer-encoding") !== undefined;
}
