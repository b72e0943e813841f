import type { MiddlewareHandler } from "hono";
import type { Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { ValidationError } from "../errors";
import type { AppEnv } from "../http/context";
import {
  claimIdempotencyKey,
  commitMarkOf,
  controlCommitMarkOf,
  type Replay,
  rememberCommittedResponse,
  rememberResponse,
  requestHashOf,
} from "./service";

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** Every middleware built here: the routes that honour the key, which the OpenAPI document must say (platform.test.ts). */
const honouring = new WeakSet<object>();

export const honoursIdempotencyKey = (handler: object): boolean => honouring.has(handler);

/**
 * The answer to a request whose write was committed (with the commit mark's `outcome`) but whose answer
 * was never saved, made again from what the write did and shown as a fresh request would be. `body` is
 * the request's JSON body, the same as the first attempt's.
 */
export type AnswerCommitted = (
  context: TenantContext,
  principal: Principal,
  outcome: unknown,
  body: unknown,
) => Promise<{ status: number; body: unknown }>;

/**
 * Replays the first response to a repeated `{P}-IDEMPOTENCY-KEY` (service.ts), on a route whose
 * writes cannot carry the commit mark: past the lease, an unanswered claim's outcome is unknown.
 */
export const idempotent: MiddlewareHandler<AppEnv> = idempotentRoute(null);

/**
 * `idempotent` for a route whose one write goes in a batch of the tenant's data database (POST /tokens,
 * /tokenize): the batch carries the commit mark, and `answerCommitted` answers from it when the
 * attempt that wrote stopped before its answer was saved. A request for which `answersAgain` holds is
 * answered from the mark even when its answer was saved: that answer may show what the caller may no
 * longer see.
 */
export const idempotentWrite = (
  answerCommitted: AnswerCommitted,
  answersAgain: (body: unknown) => boolean = () => false,
): MiddlewareHandler<AppEnv> => idempotentRoute({ answerCommitted, answersAgain, inControl: false });

/**
 * `idempotentWrite` for a route whose one write goes in a batch of the control database (POST
 * /applications, /proxies …): the batch carries a mark in idempotency_marks (ControlCommitMark), and
 * `answerCommitted` answers from it as from a data write's.
 */
export const idempotentControlWrite = (answerCommitted: AnswerCommitted): MiddlewareHandler<AppEnv> =>
  idempotentRoute({ answerCommitted, answersAgain: () => false, inControl: true });

/**
 * The request is identified by method, path and body; the body gate has already held it to valid
 * UTF-8, so its text is its bytes.
 */
function idempotentRoute(
  write: { answerCommitted: AnswerCommitted; answersAgain: (body: unknown) => boolean; inControl: boolean } | null,
): MiddlewareHandler<AppEnv> {
  const middleware: MiddlewareHandler<AppEnv> = async (c, next) => {
    const { config, context, principal } = c.var;
    const key = c.req.header(config.headers.idempotencyKey);
    if (key === undefined) return next();
    if (!KEY_PATTERN.test(key)) {
      throw ValidationError.field(`header ${config.headers.idempotencyKey}`, "must be 1-255 printable ASCII characters");
    }
    const path = new URL(c.req.url).pathname;
    const body = await c.req.text();
    const claimed = await claimIdempotencyKey(context, principal, {
      key,
      requestHash: await requestHashOf(c.req.method, path, body),
      request: `${c.req.method} ${path}`,
      commitsWithWrite: write !== null,
      marksInControl: write?.inControl,
      answeredFromMark: write?.answersAgain(parsedOrNull(body)),
    });
    const replayed = (replay: Replay) =>
      new Response(replay.body || null, {
        status: replay.status,
        headers: {
          "content-type": replay.status >= 400 ? "application/problem+json" : "application/json",
          [`${config.HEADER_PREFIX}-Idempotent-Replayed`]: "true",
        },
      });
    if ("replay" in claimed) return replayed(claimed.replay);
    if ("committed" in claimed) {
      // Only a route with answerCommitted claims keys whose records carry a commit mark.
      const answer = await write!.answerCommitted(context, principal, claimed.committed, parsedOrNull(body));
      const answered = { status: answer.status, body: JSON.stringify(answer.body) };
      await rememberCommittedResponse(context, claimed.scope, answered.status, answered.body, claimed.markedElsewhere);
      return replayed(answered);
    }
    if (write?.inControl) context.markControlCommitWith(controlCommitMarkOf(context, claimed.claim));
    else if (write) context.markCommitWith(commitMarkOf(context, claimed.claim));
    await next();
    await rememberResponse(context, claimed.claim, c.res.status, c.res.status >= 500 ? "" : await c.res.clone().text());
  };
  honouring.add(middleware);
  return middleware;
}

/** The body's JSON, or null when it is none: an optional body left out, or one the route's own validation answers. */
function parsedOrNull(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return null;
  }
}
