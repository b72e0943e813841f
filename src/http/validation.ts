import type { z } from "zod";
import { addFieldError, type FieldErrors, ValidationError } from "../errors";

/** `rules[0].container` style path of a zod issue; the target (body, query, path) when empty. */
export function fieldPath(path: readonly PropertyKey[], fallback = "body"): string {
  let text = "";
  for (const segment of path) {
    text += typeof segment === "number" ? `[${segment}]` : text ? `.${String(segment)}` : String(segment);
  }
  return text || fallback;
}

export function fieldErrorsOf(error: z.ZodError, fallback = "body"): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of error.issues) {
    const path = fieldPath(issue.path, fallback);
    addFieldError(errors, path, issue.message);
  }
  return errors;
}

export function validationErrorOf(error: z.ZodError, target = "body"): ValidationError {
  return ValidationError.summarised(`Invalid ${target}`, fieldErrorsOf(error, target));
}
