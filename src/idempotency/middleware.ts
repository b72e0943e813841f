import type { MiddlewareHandler } from "hono";
import { sha256Hex } from "../crypto/secrets";
import { ValidationError } from "../errors";
import type { AppEnv } from "../http/context";
import { claimIdempotencyKey, rememberResponse } from "./service";

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * Replays the first response to a repeated `{P}-IDEMPOTENCY-KEY` (service.ts). The
 * request is identified by method, path and body; the body gate has already held it to valid UTF-8,
 * so its text is its bytes.
 */
export const idempotent: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { config, context, principal } = c.var;
  const key = c.req.header(config.headers.idempotencyKey);
  if (key === undefined) return next();
  if (!KEY_PATTERN.test(key)) {
    throw ValidationError.field(`header ${config.headers.idempotencyKey}`, "must be 1-255 printable ASCII characters");
  }
  const requestHash = await sha256Hex(`${c.req.method} ${new URL(c.req.url).pathname} ${await c.req.text()}`);
  const replay = await claimIdempotencyKey(context, principal, key, requestHash);
  if (replay) {
    return new Response(replay.body || null, {
      status: replay.status,
      headers: {
        "content-type": replay.status >= 400 ? "application/problem+json" : "application/json",
        [`${config.HEADER_PREFIX}-Idempotent-Replayed`]: "true",
      },
    });
  }
  await next();
  await rememberResponse(context, principal, key, c.res.status, c.res.status >= 500 ? "" : await c.res.clone().text());
};
