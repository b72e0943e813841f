import { MAX_JSON_DEPTH } from "../http/body";
import { BudgetExceededError, ExpressionError } from "./errors";
import { Evaluation, type WorkBudget } from "./expressions";
import type { Mask } from "./types";

/*
 * A mask is one expression (the masked data is the text it renders) or a JSON template whose string
 * leaves are expressions: the masked data keeps the template's shape, and a leaf that is exactly
 * one output keeps its value's JSON type (`{{ data.expiration_month }}` stays a number). Masks are
 * stored as JSON text, so a string mask and a template can never be mistaken for each other.
 */

export function maskColumnOf(mask: Mask | null): string | null {
  return mask === null ? null : JSON.stringify(mask);
}

export function maskOf(column: string | null): Mask | null {
  return column === null ? null : (JSON.parse(column) as Mask);
}

/** The data as the mask shows it; the mask's expressions share one evaluation's budget. */
export function applyMask(mask: Mask, data: unknown): unknown {
  const evaluation = new Evaluation({ data });
  if (typeof mask === "string") return evaluation.text(mask);
  return mapLeaves(mask, [], (source) => evaluation.value(source));
}

/** Renders every expression of the mask over the data, reporting each failure at its path. */
export function checkMask(mask: Mask, data: unknown, report: (path: (string | number)[], message: string) => void, work: WorkBudget): void {
  const evaluation = new Evaluation({ data }, work);
  let exhausted = false;
  const render = (source: string, path: (string | number)[], typed: boolean) => {
    if (exhausted) return null;
    try {
      return typed ? evaluation.value(source) : evaluation.text(source);
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      exhausted = error instanceof BudgetExceededError;
      report(["mask", ...path], error.message);
      return null;
    }
  };
  if (typeof mask === "string") render(mask, [], false);
  else mapLeaves(mask, [], (source, path) => render(source, path, true));
}

/** A copy of the template with each string leaf replaced; the schema bounds its depth. */
function mapLeaves(template: unknown, path: (string | number)[], leaf: (source: string, path: (string | number)[]) => unknown): unknown {
  if (path.length > MAX_JSON_DEPTH) throw new ExpressionError(`a mask may nest at most ${MAX_JSON_DEPTH} levels`);
  if (typeof template === "string") return leaf(template, path);
  if (Array.isArray(template)) return template.map((item, index) => mapLeaves(item, [...path, index], leaf));
  if (template !== null && typeof template === "object") {
    return Object.fromEntries(Object.entries(template).map(([key, item]) => [key, mapLeaves(item, [...path, key], leaf)]));
  }
  return template;
}
