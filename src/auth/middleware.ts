import type { MiddlewareHandler } from "hono";
import { ForbiddenError } from "../errors";
import type { AppEnv } from "../http/context";
import { holdsPermission } from "./access";
import type { Permission } from "./permissions";

/** 403 naming the permission when the caller's application does not hold it anywhere. */
export function requirePermission(permission: Permission): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!holdsPermission(c.var.principal, permission)) throw ForbiddenError.missing(permission);
    await next();
  };
}

/** 403 naming both when the caller's application holds neither permission (a read that reveals or masks). */
export function requireEitherPermission(first: Permission, second: Permission): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!holdsPermission(c.var.principal, first) && !holdsPermission(c.var.principal, second)) {
      throw ForbiddenError.missing(`${first} or ${second}`);
    }
    await next();
  };
}
