import { type AccessRule, accessTo, defaultTransform, type Principal, stricter, type Transform } from "../auth/access";
import type { TokenPermission } from "../auth/permissions";
import { ForbiddenError } from "../errors";
import type { SessionRule } from "./schema";

/** Containers a grant applies to: those starting with `prefix`, or only `prefix` itself when `exact`. */
interface Grant {
  permissions: TokenPermission[];
  transform: Transform;
  prefix: string;
  exact: boolean;
}

/**
 * A session may hold only what its authorizer holds: for every permission it grants, on every
 * container the grant can reach, the authorizer must hold that permission there under a transform
 * at least as revealing. Plain permissions reach every container under their default transform; a
 * rule reaches its container's subtree, or what its container condition allows; a rule whose
 * conditions name only ids can match a token in any container, so it counts as granting on all.
 * Checking the grant's own prefix and every authorizer rule container inside it covers each
 * container: a container's rules are those of the longest of these prefixes it starts with.
 */
export function requireWithinAuthorizer(authorizer: Principal, permissions: TokenPermission[], rules: SessionRule[]): void {
  const grants: Grant[] =
    rules.length > 0
      ? rules.map((rule) => ({ permissions: rule.permissions, transform: rule.transform, ...reachOf(rule) }))
      : permissions.map((permission) => ({
          permissions: [permission],
          transform: defaultTransform(permission),
          prefix: "/",
          exact: false,
        }));
  const authorizerContainers = authorizer.rules.flatMap((rule: AccessRule) => (rule.container === undefined ? [] : [rule.container]));
  for (const grant of grants) {
    const points = grant.exact
      ? [grant.prefix]
      : [grant.prefix, ...authorizerContainers.filter((container) => container.startsWith(grant.prefix))];
    for (const permission of grant.permissions) {
      for (const container of points) {
        const held = accessTo(authorizer, permission, [container]);
        if (held === null) {
          throw new ForbiddenError(`The authorizing application does not hold ${permission} on container ${container}`);
        }
        if (stricter(held, grant.transform) !== grant.transform) {
          throw new ForbiddenError(
            `The session's ${grant.transform} for ${permission} on container ${container} reveals more than the authorizing application's ${held}`,
          );
        }
      }
    }
  }
}

/** Where a rule can match: its container's subtree, or the first container condition's reach (the others only narrow it). */
function reachOf(rule: SessionRule): { prefix: string; exact: boolean } {
  if (rule.container !== undefined) return { prefix: rule.container, exact: false };
  const container = rule.conditions?.find((condition) => condition.attribute === "container");
  if (!container) return { prefix: "/", exact: false };
  return { prefix: container.value, exact: container.operator === "equals" };
}
