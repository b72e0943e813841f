import { addFieldError, type FieldErrors } from "../errors";
import { fieldPath } from "../http/validation";
import { ExpressionError } from "./errors";
import { type ExpressionScope, evaluateExpression, type WorkBudget } from "./expressions";
import { checkMask } from "./mask-templates";
import type { CreateToken } from "./schema";
import { type JsonPath, jsonPath } from "./tokenize";
import { type Mask, TOKEN_TYPE_RULES, type TokenType } from "./types";

/** A token as the request defines it, with the type's defaults filled in. */
export interface TokenDefinition {
  type: TokenType;
  data: unknown;
  metadata: Record<string, string>;
  containers: string[];
  searchIndexes: string[];
  fingerprintExpression: string;
  mask: Mask | null;
  expiresAt: number | null;
}

/** What the definition's expressions rendered to, before they are keyed into a fingerprint and blind indexes. */
export interface Evaluated {
  fingerprintSource: string;
  searchValues: string[];
}

/** Reports a problem against a member of the definition. */
export type Report = (field: (string | number)[], message: string) => void;

export function definitionOf(input: CreateToken): TokenDefinition {
  const rules = TOKEN_TYPE_RULES[input.type];
  return {
    type: input.type,
    data: input.data,
    metadata: input.metadata ?? {},
    containers: [...new Set(input.containers ?? [rules.container])],
    searchIndexes: input.search_indexes ?? rules.defaultSearchIndexes ?? [],
    fingerprintExpression: input.fingerprint_expression ?? rules.fingerprintExpression,
    mask: input.mask ?? rules.mask,
    expiresAt: input.expires_at ? Date.parse(input.expires_at) : null,
  };
}

/**
 * Renders the token's expressions on one work budget (its alias id, when it has one, shares it);
 * each failure is reported against the member that holds it.
 */
export function evaluate(definition: TokenDefinition, report: Report, work: WorkBudget): Evaluated {
  const render = (field: (string | number)[], source: string, scope: ExpressionScope): string => {
    try {
      return evaluateExpression(source, scope, work);
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      report(field, error.message);
      return "";
    }
  };
  const fingerprintSource = render(["fingerprint_expression"], definition.fingerprintExpression, {
    data: definition.data,
    metadata: definition.metadata,
  });
  if (fingerprintSource.trim() === "") report(["fingerprint_expression"], "must not evaluate to an empty value");
  const searchValues = definition.searchIndexes.map((source, i) => {
    const value = render(["search_indexes", i], source, { data: definition.data });
    if (value.trim() === "") report(["search_indexes", i], `must evaluate to one value that is neither null nor empty: ${source}`);
    return value;
  });
  if (definition.mask !== null) checkMask(definition.mask, definition.data, report, work);
  return { fingerprintSource, searchValues };
}

/** Collects reports as field errors, named by the member's path (within a tokenize payload when `at` is given). */
export function fieldErrorCollector(errors: FieldErrors, at?: JsonPath): Report {
  return (field, message) => addFieldError(errors, at ? jsonPath([...at, ...field]) : fieldPath(field), message);
}
