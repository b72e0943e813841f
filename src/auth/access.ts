import type { Permission, TokenPermission } from "./permissions";

export const TRANSFORMS = ["reveal", "mask", "redact"] as const;
export type Transform = (typeof TRANSFORMS)[number];

export interface AccessRule {
  description?: string | null;
  priority: number;
  container: string;
  transform: Transform;
  permissions: Permission[];
}

export interface Principal {
  tenantId: string;
  applicationId: string;
  applicationType: "private" | "public" | "management";
  permissions: Permission[];
  rules: AccessRule[];
}

/** Default transform of plain permissions (no rules): data is revealed only to detokenize it. */
const DEFAULT_TRANSFORM: Record<TokenPermission, Transform> = {
  "token:create": "mask",
  "token:read": "mask",
  "token:update": "mask",
  "token:delete": "mask",
  "token:search": "mask",
  "token:use": "reveal",
};

/** Whether the principal holds the permission anywhere: the route-level check. */
export function holdsPermission(principal: Principal, permission: Permission): boolean {
  if (principal.rules.length === 0) return principal.permissions.includes(permission);
  return principal.rules.some((rule) => rule.permissions.includes(permission));
}

/** A rule's container covers itself and every sub-container. */
export function containerCovers(ruleContainer: string, container: string): boolean {
  return container.startsWith(ruleContainer);
}

/**
 * The transform under which the principal may exercise `permission` on a token in `containers`,
 * or null when it may not. Rules are evaluated in ascending priority and the first rule that covers
 * one of the containers and grants the permission wins. Without rules, plain permissions apply to
 * every container.
 */
export function accessTo(
  principal: Principal,
  permission: TokenPermission,
  containers: readonly string[],
): Transform | null {
  if (principal.rules.length === 0) {
    return principal.permissions.includes(permission) ? DEFAULT_TRANSFORM[permission] : null;
  }
  const rule = sortedRules(principal).find(
    (candidate) =>
      candidate.permissions.includes(permission) &&
      containers.some((container) => containerCovers(candidate.container, container)),
  );
  return rule ? rule.transform : null;
}

/**
 * The containers in which the principal holds `permission`, as prefixes, with the transform of each,
 * in rule order; `null` means every container under the default transform (no rules). Search uses it
 * to restrict the SQL to what the caller may see.
 */
export function grantedContainers(
  principal: Principal,
  permission: TokenPermission,
): { container: string; transform: Transform }[] | null {
  if (principal.rules.length === 0) {
    return principal.permissions.includes(permission) ? null : [];
  }
  return sortedRules(principal)
    .filter((rule) => rule.permissions.includes(permission))
    .map((rule) => ({ container: rule.container, transform: rule.transform }));
}

const sorted = new WeakMap<Principal, AccessRule[]>();

function sortedRules(principal: Principal): AccessRule[] {
  let rules = sorted.get(principal);
  if (!rules) {
    rules = [...principal.rules].sort((a, b) => a.priority - b.priority);
    sorted.set(principal, rules);
  }
  return rules;
}
