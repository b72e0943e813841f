import { expect } from "vitest";
import { OFFICIAL_FORMULAS } from "../../src/reactors/official";
import { call, type Tenant } from "./harness";

/** Code that returns its input: the reactor tests' default formula. */
export const ECHO_CODE = "module.exports = async function (req) { return { raw: { args: req.args, configuration: req.configuration } }; };";

export const officialFormula = (name: string) => {
  const formula = OFFICIAL_FORMULAS.find((candidate) => candidate.name === name);
  if (!formula) throw new Error(`no official formula named ${name}`);
  return formula;
};

/** A valid private formula body; `overrides` replace its members. */
export function formulaBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "Echo",
    description: "Returns its args and configuration",
    type: "private",
    code: ECHO_CODE,
    configuration: [],
    request_parameters: [],
    ...overrides,
  };
}

/** POST /reactor-formulas that must succeed; returns the formula. */
export async function createFormula(tenant: Tenant, overrides: Record<string, unknown> = {}): Promise<any> {
  const reply = await call("POST", "/reactor-formulas", { key: tenant.managementKey, body: formulaBody(overrides) });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

/** POST /reactors that must succeed; returns the reactor. */
export async function createReactor(
  tenant: Tenant,
  formulaId: string,
  options: { configuration?: Record<string, unknown>; applicationId?: string; name?: string } = {},
): Promise<any> {
  const reply = await call("POST", "/reactors", {
    key: tenant.managementKey,
    body: {
      name: options.name ?? "reactor",
      formula: { id: formulaId },
      configuration: options.configuration ?? {},
      ...(options.applicationId ? { application: { id: options.applicationId } } : {}),
    },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}
