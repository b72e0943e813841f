import { env } from "cloudflare:test";
import { expect } from "vitest";
import { OFFICIAL_FORMULAS } from "../../src/reactors/official";
import { call, createApplication, seedTenant, type Tenant } from "./harness";

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

/** POST /reactors with its own code that must succeed; returns the reactor. */
export async function createCodeReactor(
  tenant: Tenant,
  code: string,
  options: { configuration?: Record<string, unknown>; applicationId?: string; name?: string } = {},
): Promise<any> {
  const reply = await call("POST", "/reactors", {
    key: tenant.managementKey,
    body: {
      name: options.name ?? "coded",
      code,
      configuration: options.configuration ?? {},
      ...(options.applicationId ? { application: { id: options.applicationId } } : {}),
    },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

/** A tenant with a reactor running its own `code`, and a private application that may react (token:use everywhere). */
export async function codeReactorRunning(
  code: string,
  options: { configuration?: Record<string, unknown>; applicationId?: string; tenant?: Tenant } = {},
) {
  const tenant = options.tenant ?? (await seedTenant());
  const reactor = await createCodeReactor(tenant, code, { configuration: options.configuration, applicationId: options.applicationId });
  const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
  return { tenant, reactor, caller };
}

/** POST /reactors/{id}/react with the caller's key. */
export function react(key: string, reactorId: string, args: unknown, headers: Record<string, string> = {}) {
  return call("POST", `/reactors/${reactorId}/react`, { key, body: { args }, headers });
}

/** A tenant with a reactor running `code`, and a private application that may react (token:use everywhere). */
export async function reactorRunning(
  code: string,
  options: { formula?: Record<string, unknown>; configuration?: Record<string, unknown>; applicationId?: string; tenant?: Tenant } = {},
) {
  const tenant = options.tenant ?? (await seedTenant());
  const formula = await createFormula(tenant, { code, ...options.formula });
  const reactor = await createReactor(tenant, formula.id, { configuration: options.configuration, applicationId: options.applicationId });
  const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
  return { tenant, formula, reactor, caller };
}

/** POST /reactors/{id}/react-async with the caller's key. */
export function reactAsync(key: string, reactorId: string, args: unknown, headers: Record<string, string> = {}) {
  return call("POST", `/reactors/${reactorId}/react-async`, { key, body: { args }, headers });
}

/** GET /reactors/{id}/results/{request_id} with the caller's key. */
export function reactionResult(key: string, reactorId: string, requestId: string) {
  return call("GET", `/reactors/${reactorId}/results/${requestId}`, { key });
}

/** The result once the queue consumer has run the reaction (completed or failed): it runs a moment after the request. */
export async function settledReaction(key: string, reactorId: string, requestId: string, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await reactionResult(key, reactorId, requestId);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    if (reply.body.status === "completed" || reply.body.status === "failed" || Date.now() > deadline) return reply.body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Changes a formula's row directly, as a release changes an official formula. The API refuses such
 * changes to a tenant's own formula, so this is the one raw write the reactor tests make.
 */
export async function changeFormulaAsARelease(formulaId: string, columns: { configuration?: unknown[]; status?: string }) {
  const assignments = Object.entries({
    ...(columns.configuration ? { configuration: JSON.stringify(columns.configuration) } : {}),
    ...(columns.status ? { status: columns.status } : {}),
  });
  const result = await env.DB.prepare(
    `UPDATE reactor_formulas SET ${assignments.map(([column]) => `${column} = ?`).join(", ")}, modified_at = ? WHERE id = ?`,
  )
    .bind(...assignments.map(([, value]) => value), Date.now(), formulaId)
    .run();
  expect(result.meta.changes).toBe(1);
}
