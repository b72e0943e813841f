import type { MiddlewareHandler } from "hono";
import { secretsEqual } from "../crypto/secrets";
import { NotFoundError, UnauthenticatedError } from "../errors";
import type { AppEnv } from "./context";

/** Operators only: `{P}-OPERATOR-KEY` must equal OPERATOR_API_KEY; without that secret the route does not exist. */
export const requireOperator: MiddlewareHandler<AppEnv> = async (c, next) => {
  const expected = c.var.config.OPERATOR_API_KEY;
  if (!expected) throw new NotFoundError(`Route ${c.req.method} ${c.req.path}`);
  const given = c.req.header(c.var.config.headers.operatorKey);
  if (!given || !(await secretsEqual(given, expected))) {
    throw new UnauthenticatedError(`A valid ${c.var.config.HEADER_PREFIX}-OPERATOR-KEY header is required`);
  }
  c.var.request.audit.actor = { id: null, type: "operator" };
  await next();
};
