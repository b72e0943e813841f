import { type FieldErrors, ValidationError } from "../errors";
import { isPlainObject } from "../http/json";
import { NAME_MAX_LENGTH, REACTORS } from "../limits";
import type { ConfigurationElement, RequestParameter, ValueType } from "./schema";

export type ConfigurationValue = string | number | boolean;
export type Configuration = Record<string, ConfigurationValue>;

type Conversion = { ok: true; value: ConfigurationValue } | { ok: false };

/**
 * The value as the declared type when that loses nothing: `"123"` ↔ 123 and `"true"` ↔ true, but
 * not `"0123"` or `"1.50"` (they would come back different), and never objects, arrays or null.
 */
export function convertLosslessly(value: unknown, type: ValueType): Conversion {
  if (typeof value === type) return { ok: true, value: value as ConfigurationValue };
  switch (type) {
    case "string":
      return (typeof value === "number" && Number.isFinite(value)) || typeof value === "boolean"
        ? { ok: true, value: String(value) }
        : { ok: false };
    case "number": {
      if (typeof value !== "string") return { ok: false };
      const number = Number(value);
      return Number.isFinite(number) && String(number) === value ? { ok: true, value: number } : { ok: false };
    }
    case "boolean":
      return value === "true" || value === "false" ? { ok: true, value: value === "true" } : { ok: false };
  }
}

function typeMessage(value: unknown, type: ValueType): string {
  return typeof value === "string" ? `must be a ${type}; "${clip(value)}" does not convert to one without loss` : `must be a ${type}`;
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/**
 * A reactor's configuration against its formula's contract: every declared name present, each value
 * of its declared type (converted losslessly), no undeclared name. Returns the converted values and
 * the problems, keyed by field path under `path`.
 */
export function conformConfiguration(
  contract: ConfigurationElement[],
  configuration: Record<string, unknown>,
  path = "configuration",
): { configuration: Configuration; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const conformed: Configuration = {};
  const declared = new Set(contract.map((element) => element.name));
  for (const element of contract) {
    const value = configuration[element.name];
    const at = `${path}.${element.name}`;
    if (value === undefined || value === null) {
      errors[at] = [`is required by the formula (a ${element.type})`];
      continue;
    }
    const conversion = convertLosslessly(value, element.type);
    if (conversion.ok) conformed[element.name] = conversion.value;
    else errors[at] = [typeMessage(value, element.type)];
  }
  for (const name of Object.keys(configuration)) {
    if (!declared.has(name)) errors[`${path}.${name}`] = ["is not declared by the formula's configuration"];
  }
  return { configuration: conformed, errors };
}

/**
 * The configuration of a reactor with its own code, which no contract describes: an object of
 * strings (the original interface's map of string to string), at most REACTORS.maxConfigurationEntries
 * entries of at most REACTORS.configurationValueMaxLength characters, names as long as other names.
 */
export function conformCodeConfiguration(
  configuration: Record<string, unknown>,
  path = "configuration",
): { configuration: Configuration; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const conformed: Configuration = {};
  const names = Object.keys(configuration);
  if (names.length > REACTORS.maxConfigurationEntries) {
    errors[path] = [`must hold at most ${REACTORS.maxConfigurationEntries} entries (it has ${names.length})`];
    return { configuration: conformed, errors };
  }
  for (const name of names) {
    const value = configuration[name];
    const at = `${path}.${name}`;
    if (name.length === 0 || name.length > NAME_MAX_LENGTH) errors[at] = [`names must be 1 to ${NAME_MAX_LENGTH} characters`];
    else if (typeof value !== "string") errors[at] = ["must be a string"];
    else if (value.length > REACTORS.configurationValueMaxLength) {
      errors[at] = [`must be at most ${REACTORS.configurationValueMaxLength} characters`];
    } else conformed[name] = value;
  }
  return { configuration: conformed, errors };
}

/**
 * Args against the formula's request parameters: a missing required parameter or a value that does
 * not convert losslessly to its type is a 400 naming it; undeclared args pass through untouched.
 */
export function conformArgs(parameters: RequestParameter[], args: Record<string, unknown>): Record<string, unknown> {
  if (parameters.length === 0) return args;
  const conformed = structuredClone(args);
  const errors: FieldErrors = {};
  for (const parameter of parameters) {
    const segments = parameter.name.split(".");
    const leaf = segments.pop()!;
    let parent: Record<string, unknown> | undefined = conformed;
    let at = "args";
    for (const segment of segments) {
      at += `.${segment}`;
      const child: unknown = parent[segment];
      if (child === undefined || child === null) {
        parent = undefined;
        break;
      }
      if (!isPlainObject(child)) {
        errors[at] = [`must be an object: the formula declares ${parameter.name}`];
        parent = undefined;
        break;
      }
      parent = child;
    }
    const path = `args.${parameter.name}`;
    const value = parent?.[leaf];
    if (value === undefined || value === null) {
      if (!parameter.optional && !errors[at]) errors[path] = [`is required (a ${parameter.type})`];
      continue;
    }
    const conversion = convertLosslessly(value, parameter.type);
    if (conversion.ok) parent![leaf] = conversion.value;
    else errors[path] = [typeMessage(value, parameter.type)];
  }
  if (Object.keys(errors).length > 0) {
    throw new ValidationError(`The args do not satisfy the formula's request parameters: ${Object.keys(errors).join(", ")}`, errors);
  }
  return conformed;
}
