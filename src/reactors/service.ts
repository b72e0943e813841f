import type { ApplicationResponse } from "../applications/schema";
import { applicationsById } from "../applications/service";
import type { Principal } from "../auth/access";
import { principalOf, requireActingApplication } from "../auth/service";
import type { TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { detokenizeJson } from "../detokenization/service";
import { ConflictError, describeFieldErrors, NotFoundError, ValidationError } from "../errors";
import { applyMergePatch } from "../http/json";
import { auditFieldsOf, isoTime, type ListFilter, type Page, pageOf } from "../http/schemas";
import type { ReactorResult } from "../sandbox";
import { tokenize } from "../tokens/creation";
import { decryptConfiguration, encryptConfiguration } from "./configuration";
import { type Configuration, conformArgs, conformConfiguration } from "./contract";
import { type FormulaRow, findFormula, nextVersion, toFormulaResponse } from "./formulas";
import { ensureOfficialFormulas } from "./official/seed";
import type { ReactorInput, ReactorPatch, ReactorReplacement, ReactorResponse, ReactResult } from "./schema";
import { scriptOwnerOf } from "./script-owner";
import type { ReactorRow } from "./storage";
import * as storage from "./storage";

async function toReactorResponse(
  keys: TenantKeys,
  row: ReactorRow,
  formula: FormulaRow,
  application: ApplicationResponse | null,
): Promise<ReactorResponse> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    name: row.name,
    formula: toFormulaResponse(formula),
    configuration: await decryptConfiguration(keys, row),
    application,
    application_id: row.applicationId,
    ...auditFieldsOf(row),
  };
}

/** The reactor's application as responses show it; null without one (or once it was deleted). */
async function applicationOf(context: TenantContext, row: ReactorRow): Promise<ApplicationResponse | null> {
  if (row.applicationId === null) return null;
  return (await applicationsById(context, [row.applicationId])).get(row.applicationId) ?? null;
}

/** A formula a reactor can be made from: visible to the tenant and generally available. */
async function usableFormula(context: TenantContext, formulaId: string): Promise<FormulaRow> {
  const formula = await findFormula(context, formulaId).catch((error: unknown) => {
    if (error instanceof NotFoundError) {
      throw ValidationError.field("formula.id", "is neither an official reactor formula nor one of this tenant's");
    }
    throw error;
  });
  if (formula.status === "coming_soon") {
    throw ValidationError.field("formula.id", "is a coming_soon formula: it cannot be used by reactors until it is verified");
  }
  return formula;
}

/** Everything the schema cannot decide alone: the formula, its configuration contract, the application. */
async function checkInput(context: TenantContext, input: ReactorInput) {
  const formula = await usableFormula(context, input.formula.id);
  const contract = JSON.parse(formula.configuration);
  const { configuration, errors } = conformConfiguration(contract, input.configuration);
  if (Object.keys(errors).length > 0) {
    throw new ValidationError(
      `The configuration does not satisfy the contract of formula ${formula.id}: ${Object.keys(errors).join(", ")}`,
      errors,
    );
  }
  if (input.application) await requireActingApplication(context, input.application.id);
  return { formula, configuration };
}

const formulaChanged = (formulaId: string) =>
  new ConflictError(`Reactor formula ${formulaId} changed while the reactor was being saved; retry`);

export async function createReactor(context: TenantContext, principal: Principal, input: ReactorInput): Promise<ReactorResponse> {
  const { formula, configuration } = await checkInput(context, input);
  const keys = await context.keys();
  const id = crypto.randomUUID();
  const row: ReactorRow = {
    id,
    tenantId: principal.tenantId,
    name: input.name,
    formulaId: formula.id,
    configuration: await encryptConfiguration(keys, id, configuration),
    applicationId: input.application?.id ?? null,
    createdBy: principal.applicationId,
    createdAt: Date.now(),
    modifiedBy: null,
    modifiedAt: null,
  };
  if (!(await storage.insertReactor(context.control, row, formula))) throw formulaChanged(formula.id);
  context.audit.describe({ entityId: id, event: { type: "reactor.created", data: reactorEventData(row) } });
  return toReactorResponse(keys, row, formula, await applicationOf(context, row));
}

/** A reactor as webhook events describe it: never its configuration. */
function reactorEventData(row: ReactorRow): Record<string, unknown> {
  return {
    reactor: {
      id: row.id,
      name: row.name,
      formula_id: row.formulaId,
      application_id: row.applicationId,
      created_by: row.createdBy,
      created_at: isoTime(row.createdAt),
      modified_by: row.modifiedBy,
      modified_at: isoTime(row.modifiedAt),
    },
  };
}

async function findReactor(context: TenantContext, id: string): Promise<ReactorRow> {
  const row = await storage.findReactor(context.control, context.tenantId, id);
  if (!row) throw new NotFoundError(`Reactor ${id}`);
  return row;
}

export async function getReactor(context: TenantContext, _principal: Principal, id: string): Promise<ReactorResponse> {
  const row = await findReactor(context, id);
  const formula = await findFormula(context, row.formulaId);
  return toReactorResponse(await context.keys(), row, formula, await applicationOf(context, row));
}

export async function listReactors(context: TenantContext, _principal: Principal, filter: ListFilter): Promise<Page<ReactorResponse>> {
  const { rows, total } = await storage.reactorsPage(context.control, context.tenantId, filter);
  const formulas = await storage.visibleFormulasAmong(context.control, context.tenantId, [...new Set(rows.map((row) => row.formulaId))]);
  const formulaById = new Map(formulas.map((formula) => [formula.id, formula]));
  const applicationIds = rows.flatMap((row) => (row.applicationId === null ? [] : [row.applicationId]));
  const applicationById = await applicationsById(context, applicationIds);
  const keys = await context.keys();
  const data = await Promise.all(
    rows.map((row) =>
      toReactorResponse(keys, row, formulaById.get(row.formulaId)!, (row.applicationId && applicationById.get(row.applicationId)) || null),
    ),
  );
  return pageOf(data, total, filter.page, filter.size);
}

/** Saves the whole reactor, checked as on creation, against the formula version it was checked with. */
async function saveReactor(
  context: TenantContext,
  principal: Principal,
  existing: ReactorRow,
  input: ReactorInput,
): Promise<ReactorResponse> {
  const { id } = existing;
  const { formula, configuration } = await checkInput(context, input);
  const keys = await context.keys();
  const changes = {
    name: input.name,
    formulaId: formula.id,
    configuration: await encryptConfiguration(keys, id, configuration),
    applicationId: input.application?.id ?? null,
    modifiedBy: principal.applicationId,
    modifiedAt: nextVersion(existing),
  };
  const row = await storage.updateReactor(context.control, context.tenantId, id, changes, formula);
  if (!row) {
    await findReactor(context, id);
    throw formulaChanged(formula.id);
  }
  context.audit.describe({ event: { type: "reactor.updated", data: reactorEventData(row) } });
  return toReactorResponse(keys, row, formula, await applicationOf(context, row));
}

/** The original interface's update sends no formula: the reactor then keeps its own. */
export async function replaceReactor(context: TenantContext, principal: Principal, id: string, input: ReactorReplacement) {
  const existing = await findReactor(context, id);
  return saveReactor(context, principal, existing, { ...input, formula: input.formula ?? { id: existing.formulaId } });
}

/** RFC 7396 over the stored reactor: configuration merges per name (null removes one), the rest replaces. */
export async function patchReactor(context: TenantContext, principal: Principal, id: string, patch: ReactorPatch) {
  const existing = await findReactor(context, id);
  const stored = await decryptConfiguration(await context.keys(), existing);
  const configuration = applyMergePatch(stored, patch.configuration ?? {}) as Configuration;
  return saveReactor(context, principal, existing, {
    name: patch.name ?? existing.name,
    formula: patch.formula ?? { id: existing.formulaId },
    configuration,
    application: patch.application === undefined ? (existing.applicationId ? { id: existing.applicationId } : null) : patch.application,
  });
}

export async function deleteReactor(context: TenantContext, _principal: Principal, id: string): Promise<void> {
  if (!(await storage.deleteReactor(context.control, context.tenantId, id))) throw new NotFoundError(`Reactor ${id}`);
  context.audit.describe({ event: { type: "reactor.deleted", data: { reactor: { id } } } });
}

/**
 * Runs the reactor's formula next to the data: args are detokenized as the caller may use them,
 * checked against the request parameters, handed to the code with the configuration, and the code's
 * `tokenize` output is tokenized with the reactor's application, all or nothing.
 */
export async function react(context: TenantContext, principal: Principal, id: string, args: Record<string, unknown>): Promise<ReactResult> {
  const { reactor, formula, application } = await findRunnableReactor(context, id);
  const configuration = await currentConfiguration(context, reactor, formula);
  // Detokenized as the body's `args` member, so that errors name paths like args.card.number.
  const detokenized = ((await detokenizeJson(context, principal, { args })) as { args: Record<string, unknown> }).args;
  // A script of kind "reactor" always yields a ReactorResult.
  const output = (await context.sandbox.run({
    owner: scriptOwnerOf(formula),
    code: formula.code,
    input: { args: conformArgs(JSON.parse(formula.requestParameters), detokenized), configuration },
    application,
  })) as ReactorResult;
  return { tokens: await tokenizeOutput(context, reactor, application, output.tokenize), raw: output.raw ?? null };
}

/** The reactor with its formula and the principal of its application, in one query: react is on the hot path. */
async function findRunnableReactor(context: TenantContext, id: string) {
  await ensureOfficialFormulas(context);
  const found = await storage.runnableReactor(context.control, context.tenantId, id);
  if (!found) throw new NotFoundError(`Reactor ${id}`);
  const { reactor, formula } = found;
  if (formula.status === "coming_soon") {
    throw new ConflictError(`Reactor formula ${formula.id} is coming_soon: its reactors cannot run until it is verified again`);
  }
  if (reactor.applicationId !== null && found.application === null) {
    throw new ConflictError(`Reactor ${reactor.id}'s application ${reactor.applicationId} no longer exists; update the reactor`);
  }
  return { reactor, formula, application: found.application && principalOf(found.application) };
}

/**
 * The stored configuration, checked again against the formula as it is now: an official formula
 * changes with releases, and a reactor it no longer fits fails clearly instead of running half-configured.
 */
async function currentConfiguration(context: TenantContext, reactor: ReactorRow, formula: FormulaRow): Promise<Configuration> {
  const stored = await decryptConfiguration(await context.keys(), reactor);
  const { configuration, errors } = conformConfiguration(JSON.parse(formula.configuration), stored);
  if (Object.keys(errors).length > 0) {
    throw new ConflictError(
      `Reactor ${reactor.id}'s configuration no longer satisfies formula ${formula.id} (${describeFieldErrors(errors)}); update the reactor`,
    );
  }
  return configuration;
}

async function tokenizeOutput(context: TenantContext, reactor: ReactorRow, application: Principal | null, payload: unknown) {
  if (payload === undefined || payload === null) return null;
  if (!application) {
    throw new ConflictError(
      `The formula returned tokenize, but reactor ${reactor.id} has no application to tokenize with; set one with token:create`,
    );
  }
  // Awaited, not handed on: workerd reports a promise that rejects before anyone awaits it as unhandled.
  return await tokenize(context, application, payload);
}
