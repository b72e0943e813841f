import type { Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { ConflictError, describeFieldErrors, ForbiddenError, NotFoundError } from "../errors";
import { auditFieldsOf, isoTime, type ListFilter, type Page, pageOf } from "../http/schemas";
import { validateCode } from "../sandbox";
import { decryptConfiguration } from "./configuration";
import { conformConfiguration } from "./contract";
import { ensureOfficialFormulas } from "./official/seed";
import type { FormulaInput, FormulaResponse } from "./schema";
import { scriptOwnerOf } from "./script-owner";
import * as storage from "./storage";
import { type FormulaRow, versionOf } from "./storage";

export type { FormulaRow } from "./storage";

export function toFormulaResponse(row: FormulaRow): FormulaResponse {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    type: row.type,
    status: row.status,
    icon: row.icon,
    code: row.code,
    configuration: JSON.parse(row.configuration),
    request_parameters: JSON.parse(row.requestParameters),
    ...auditFieldsOf(row),
  };
}

/** The modification time of a save: strictly after the previous version, even within one millisecond. */
export const nextVersion = (row: { createdAt: number; modifiedAt: number | null }) => Math.max(Date.now(), versionOf(row) + 1);

/** The formula if the tenant may see it (official or its own); 404 otherwise, never 403. */
export async function findFormula(context: TenantContext, id: string): Promise<FormulaRow> {
  await ensureOfficialFormulas(context);
  const row = await storage.findVisibleFormula(context.control, context.tenantId, id);
  if (!row) throw new NotFoundError(`Reactor formula ${id}`);
  return row;
}

/** Official formulas belong to the service: tenants read and use them, and change only their own. */
function refuseOfficial(what: string): never {
  throw new ForbiddenError(`Official reactor formulas are maintained by the service and cannot be ${what}; use a private formula`);
}

function columnsOf(input: FormulaInput) {
  return {
    name: input.name,
    description: input.description ?? null,
    icon: input.icon ?? null,
    code: input.code,
    configuration: JSON.stringify(input.configuration),
    requestParameters: JSON.stringify(input.request_parameters),
  };
}

/** The code is checked by the sandbox and published before the row exists, so a saved formula can always run. */
export async function createFormula(context: TenantContext, principal: Principal, input: FormulaInput): Promise<FormulaResponse> {
  if (input.type === "official") refuseOfficial("created by tenants");
  validateCode(input.code, "code");
  const row: FormulaRow = {
    id: crypto.randomUUID(),
    tenantId: principal.tenantId,
    type: "private",
    status: "verified",
    ...columnsOf(input),
    createdBy: principal.applicationId,
    createdAt: Date.now(),
    modifiedBy: null,
    modifiedAt: null,
  };
  await context.sandbox.publish(scriptOwnerOf(row), row.code);
  await context.withControlMark({ id: row.id }, (mark) => storage.insertFormula(context.control, row, mark));
  return createdAnswer(context, row);
}

function createdAnswer(context: TenantContext, row: FormulaRow): FormulaResponse {
  context.audit.describe({ entityId: row.id, event: { type: "reactor-formula.created", data: formulaEventData(row) } });
  return toFormulaResponse(row);
}

/**
 * The answer to a POST /reactor-formulas whose write was committed and whose answer was never saved:
 * the formula as it was created; a 409 when it was deleted or replaced since (code replaced since is
 * for a read, reactor:read, to show).
 */
export const answerCommittedCreate = async (context: TenantContext, _principal: Principal, outcome: unknown) => {
  const row = await storage.findVisibleFormula(context.control, context.tenantId, (outcome as { id: string }).id);
  if (!row || row.tenantId !== context.tenantId) {
    throw ConflictError.processed("the formula it created was deleted since");
  }
  if (row.modifiedAt !== null) {
    throw ConflictError.processed("the formula it created was changed since: read it");
  }
  return { status: 201, body: createdAnswer(context, row) };
};

/** A formula as webhook events describe it: never its code. */
function formulaEventData(row: FormulaRow): Record<string, unknown> {
  const formula = { id: row.id, name: row.name, type: row.type, created_by: row.createdBy, created_at: isoTime(row.createdAt) };
  return { reactor_formula: { ...formula, modified_by: row.modifiedBy, modified_at: isoTime(row.modifiedAt) } };
}

export async function getFormula(context: TenantContext, _principal: Principal, id: string): Promise<FormulaResponse> {
  return toFormulaResponse(await findFormula(context, id));
}

/** Official formulas first, then the tenant's own, newest first. */
export async function listFormulas(
  context: TenantContext,
  _principal: Principal,
  filter: Omit<ListFilter, "id">,
): Promise<Page<FormulaResponse>> {
  await ensureOfficialFormulas(context);
  const { rows, total } = await storage.formulasPage(context.control, context.tenantId, filter);
  return pageOf(rows.map(toFormulaResponse), total, filter.page, filter.size);
}

/**
 * A contract change that the configuration of an existing reactor would not satisfy is a 409 naming
 * those reactors: they must be updated (or deleted) first, so no reactor breaks silently.
 */
async function refuseBreakingReactors(context: TenantContext, formulaId: string, contract: FormulaInput["configuration"]) {
  const rows = await storage.reactorsOfFormula(context.control, context.tenantId, formulaId);
  const keys = await context.keys();
  const broken: string[] = [];
  for (const row of rows) {
    const { errors } = conformConfiguration(contract, await decryptConfiguration(keys, row));
    if (Object.keys(errors).length > 0) broken.push(`${row.name} (${row.id}): ${describeFieldErrors(errors)}`);
  }
  if (broken.length > 0) {
    throw new ConflictError(
      `The new configuration contract would break ${broken.length} reactor(s); update or delete them first: ${broken.join(" | ")}`,
    );
  }
  return { count: rows.length, latest: Math.max(0, ...rows.map(versionOf)) };
}

export async function updateFormula(
  context: TenantContext,
  principal: Principal,
  id: string,
  input: FormulaInput,
): Promise<FormulaResponse> {
  const existing = await findFormula(context, id);
  if (existing.tenantId === null) refuseOfficial("changed");
  if (input.type === "official") refuseOfficial("created by tenants");
  validateCode(input.code, "code");
  const seen = await refuseBreakingReactors(context, id, input.configuration);
  await context.sandbox.publish(scriptOwnerOf(existing), input.code);
  const changes = { ...columnsOf(input), modifiedBy: principal.applicationId, modifiedAt: nextVersion(existing) };
  const row = await storage.updateFormula(context.control, context.tenantId, id, changes, seen);
  if (!row) {
    throw new ConflictError(`Reactor formula ${id} or its reactors changed during the update; retry it`);
  }
  context.audit.describe({ event: { type: "reactor-formula.updated", data: formulaEventData(row) } });
  return toFormulaResponse(row);
}

/** Deleting a formula that reactors still use is a 409 naming them (checked in the same statement). */
export async function deleteFormula(context: TenantContext, _principal: Principal, id: string): Promise<void> {
  const existing = await findFormula(context, id);
  if (existing.tenantId === null) refuseOfficial("deleted");
  if (!(await storage.deleteUnusedFormula(context.control, context.tenantId, id))) {
    const users = await storage.reactorsUsing(context.control, context.tenantId, id, 10);
    if (users.length === 0) throw new NotFoundError(`Reactor formula ${id}`);
    throw new ConflictError(
      `Reactor formula ${id} is used by reactors ${users.map((reactor) => `${reactor.name} (${reactor.id})`).join(", ")}; delete them first`,
    );
  }
  context.audit.describe({ event: { type: "reactor-formula.deleted", data: { reactor_formula: { id } } } });
}
