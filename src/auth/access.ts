import { ForbiddenError } from "../errors";
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
  /** The id of the API key the request presented (for the audit log); absent for a proxy's or reactor's application. */
  credentialId?: string;
  /** When that API key stops working (ms since the epoch); null or absent: never. */
  credentialExpiresAt?: number | null;
}

/** The principal of a request authenticated by an API key: it always names the key. */
export type KeyPrincipal = Principal & { credentialId: string };

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
 * or null when no container grants it. A token in several containers is presented under the
 * strictest of their rules (redact over mask over reveal), and a container without a rule for the
 * permission counts as redact: putting a token into one more container never loosens anyone's view
 * of it. Within one container, rules are evaluated in ascending priority and the first rule that
 * covers it and grants the permission wins. Without rules, plain permissions apply to every container.
 */
export function accessTo(principal: Principal, permission: TokenPermission, containers: readonly string[]): Transform | null {
  if (principal.rules.length === 0) {
    return principal.permissions.includes(permission) ? DEFAULT_TRANSFORM[permission] : null;
  }
  let granted = false;
  let strictest: Transform = "reveal";
  for (const container of containers) {
    const transform = ruleFor(principal, permission, container)?.transform;
    if (transform !== undefined) granted = true;
    strictest = stricter(strictest, transform ?? "redact");
  }
  return granted ? strictest : null;
}

function ruleFor(principal: Principal, permission: TokenPermission, container: string): AccessRule | undefined {
  return sortedRules(principal).find((rule) => rule.permissions.includes(permission) && containerCovers(rule.container, container));
}

/**
 * The containers in which the principal holds `permission`, as prefixes, with the transform of each,
 * in rule order; `null` means every container under the default transform (no rules). Search uses it
 * to restrict the SQL to what the caller may see.
 */
export function grantedContainers(principal: Principal, permission: TokenPermission): { container: string; transform: Transform }[] | null {
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

/**
 * Writes need the permission on every container involved, not just one of them: a 403 naming the
 * containers it lacks (`where` locates the request within a call, for messages).
 */
export function requireOnEveryContainer(principal: Principal, permission: TokenPermission, containers: string[], where = ""): void {
  const denied = containers.filter((container) => accessTo(principal, permission, [container]) === null);
  if (denied.length > 0) throw new ForbiddenError(`${permission} is not granted on container ${denied.join(", ")}${where}`);
}

const TRANSFORM_RESTRICTIVENESS: Transform[] = ["redact", "mask", "reveal"];

/** The stricter of two transforms: redact over mask over reveal. */
export function stricter(a: Transform, b: Transform): Transform {
  return TRANSFORM_RESTRICTIVENESS.indexOf(a) <= TRANSFORM_RESTRICTIVENESS.indexOf(b) ? a : b;
}

/**
 * Detokenizing needs token:use on every container of the token; when the containers' rules
 * differ, the most restrictive transform applies.
 */
export function useTransform(principal: Principal, id: string, containers: string[]): Transform {
  for (const container of containers) {
    if (accessTo(principal, "token:use", [container]) === null) {
      throw new ForbiddenError(`token:use is not granted on container ${container} of token ${id}`);
    }
  }
  return accessTo(principal, "token:use", containers) ?? "redact";
}
