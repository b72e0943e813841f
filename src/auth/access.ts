import { ForbiddenError, NotFoundError } from "../errors";
import type { ApplicationType, Permission, TokenPermission } from "./permissions";

export const TRANSFORMS = ["reveal", "mask", "redact"] as const;
export type Transform = (typeof TRANSFORMS)[number];

export const CONDITION_ATTRIBUTES = ["id", "container"] as const;
export const CONDITION_OPERATORS = ["equals", "starts_with"] as const;

/** A session's rule may name tokens instead of a container: it matches a token when all its conditions hold. */
export interface AccessCondition {
  attribute: (typeof CONDITION_ATTRIBUTES)[number];
  operator: (typeof CONDITION_OPERATORS)[number];
  value: string;
}

/** Either `container` (every application's rules) or `conditions` (an expiring application's, from a session). */
export interface AccessRule {
  description?: string | null;
  priority: number;
  container?: string;
  conditions?: AccessCondition[];
  transform: Transform;
  permissions: Permission[];
}

export interface Principal {
  tenantId: string;
  applicationId: string;
  applicationType: ApplicationType;
  permissions: Permission[];
  rules: AccessRule[];
  /** A public application's `allowed_origins`: when not empty, the only browser origins its keys answer (besides the vault's). */
  allowedOrigins: string[];
  /** The id of the API key the request presented (for the audit log); absent for a proxy's or reactor's application. */
  credentialId?: string;
  /** When that API key stops working (ms since the epoch); null or absent: never. */
  credentialExpiresAt?: number | null;
}

/**
 * Keys that a browser holds: a public key ships in every shopper's page, and a session's expiring key
 * is made for one. Neither is shown an oracle of data it did not type (docs/security.md, rule 8).
 */
export function isBrowserKey(principal: Pick<Principal, "applicationType">): boolean {
  return principal.applicationType === "public" || principal.applicationType === "expiring";
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

export function defaultTransform(permission: TokenPermission): Transform {
  return DEFAULT_TRANSFORM[permission];
}

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
 * The transform under which the principal may exercise `permission` on a token in `containers`
 * (with its id, which rules with conditions need: without it they match nothing),
 * or null when no container grants it. A token in several containers is presented under the
 * strictest of their rules (redact over mask over reveal), and a container without a rule for the
 * permission counts as redact: putting a token into one more container never loosens anyone's view
 * of it. Within one container, rules are evaluated in ascending priority and the first rule that
 * covers it and grants the permission wins. Without rules, plain permissions apply to every container.
 */
export function accessTo(
  principal: Principal,
  permission: TokenPermission,
  containers: readonly string[],
  tokenId?: string,
): Transform | null {
  if (principal.rules.length === 0) {
    return principal.permissions.includes(permission) ? DEFAULT_TRANSFORM[permission] : null;
  }
  let granted = false;
  let strictest: Transform = "reveal";
  for (const container of containers) {
    const transform = ruleFor(principal, permission, container, tokenId)?.transform;
    if (transform !== undefined) granted = true;
    strictest = stricter(strictest, transform ?? "redact");
  }
  return granted ? strictest : null;
}

function ruleFor(principal: Principal, permission: TokenPermission, container: string, tokenId?: string): AccessRule | undefined {
  return sortedRules(principal).find((rule) => rule.permissions.includes(permission) && ruleMatches(rule, container, tokenId));
}

function ruleMatches(rule: AccessRule, container: string, tokenId: string | undefined): boolean {
  if (rule.conditions) {
    return rule.conditions.every((condition) => {
      const subject = condition.attribute === "id" ? tokenId : container;
      if (subject === undefined) return false;
      return condition.operator === "equals" ? subject === condition.value : subject.startsWith(condition.value);
    });
  }
  return rule.container !== undefined && containerCovers(rule.container, container);
}

/**
 * The containers in which the principal holds `permission`, as prefixes, with the transform of each,
 * in rule order; `null` means every container under the default transform (no rules). Search uses it
 * to restrict the SQL to what the caller may see. Rules with conditions are left out: they grant
 * only the tokens they name, read by id, so lists and searches never show a token through them.
 */
export function grantedContainers(principal: Principal, permission: TokenPermission): { container: string; transform: Transform }[] | null {
  if (principal.rules.length === 0) {
    return principal.permissions.includes(permission) ? null : [];
  }
  return sortedRules(principal).flatMap((rule) =>
    rule.permissions.includes(permission) && rule.container !== undefined && !rule.conditions
      ? [{ container: rule.container, transform: rule.transform }]
      : [],
  );
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
export function requireOnEveryContainer(
  principal: Principal,
  permission: TokenPermission,
  containers: string[],
  where = "",
  tokenId?: string,
): void {
  const denied = containers.filter((container) => accessTo(principal, permission, [container], tokenId) === null);
  if (denied.length > 0) throw new ForbiddenError(`${permission} is not granted on container ${denied.join(", ")}${where}`);
}

/**
 * requireOnEveryContainer for an existing token's own containers. A key that a browser holds is
 * answered the 404 of an unknown id instead of a 403 naming a container: it learns nothing of tokens
 * it may not touch, not even that they exist.
 */
export function requireOnTokenContainers(principal: Principal, permission: TokenPermission, containers: string[], tokenId: string): void {
  if (isBrowserKey(principal) && containers.some((container) => accessTo(principal, permission, [container], tokenId) === null)) {
    throw new NotFoundError(`Token ${tokenId}`);
  }
  requireOnEveryContainer(principal, permission, containers, "", tokenId);
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
    if (accessTo(principal, "token:use", [container], id) === null) {
      throw new ForbiddenError(`token:use is not granted on container ${container} of token ${id}`);
    }
  }
  return accessTo(principal, "token:use", containers, id) ?? "redact";
}
