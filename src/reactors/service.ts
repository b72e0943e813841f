import type { ApplicationResponse } from "../applications/schema";
import { applicationsById } from "../applications/service";
import type { Principal } from "../auth/access";
import { principalOf, requireActingApplication } from "../auth/service";
import type { ScriptOwner, TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import type { Database } from "../db/client";
import { detokenizeJson } from "../detokenization/service";
import { ConflictError, describeFieldErrors, type FieldErrors, NotFoundError, ValidationError } from "../errors";
import { applyMergePatch } from "../http/json";
import { auditFieldsOf, isoTime, type ListFilter, type Page, pageOf } from "../http/schemas";
import { type ReactorResult, validateCode } from "../sandbox";
import { tokenize } from "../tokens/creation";
import { decryptConfiguration, encryptConfiguration } from "./configuration";
import { type Configuration, conformArgs, conformCodeConfiguration, conformConfiguration } from "./contract";
import { type FormulaRow, findFormula, nextVersion, toFormulaResponse } from "./formulas";
import { ensureOfficialFormulas } from "./official/seed";
import {
  type ConfigurationElement,
  type ReactorInput,
  type ReactorPatch,
  type ReactorReplacement,
  type ReactorResponse,
  type ReactResult,
  type RequestParameter,
  RUNTIME_IMAGE,
} from "./schema";
import { scriptOwnerOf } from "./script-owner";
import type { ReactorRow } from "./storage";
import * as storage from "./storage";

async function toReactorResponse(
  keys: TenantKeys,
  row: ReactorRow,
  formula: FormulaRow | null,
  application: ApplicationResponse | null,
): Promise<ReactorResponse> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    name: row.name,
    formula: formula && toFormulaResponse(formula),
    code: row.code,
    runtime: row.code === null ? null : { image: RUNTIME_IMAGE },
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

/** A reactor as it is to be saved: what it runs (exactly one of a formula and its own code) and with what. */
type ReactorSave = Omit<ReactorInput, "formula" | "code"> &
  ({ formula: { id: string }; code?: undefined } | { code: string; formula?: undefined });

/**
 * Everything the schema cannot decide alone: the formula and its configuration contract, or the
 * reactor's code (checked by the sandbox) and its free configuration; the application.
 */
async function checkInput(context: TenantContext, input: ReactorSave) {
  let formula: FormulaRow | null = null;
  let conformed: { configuration: Configuration; errors: FieldErrors };
  if (input.code !== undefined) {
    validateCode(input.code, "code");
    conformed = conformCodeConfiguration(input.configuration);
  } else {
    if (input.runtime) throw ValidationError.field("runtime", "applies only to a reactor with its own code");
    formula = await usableFormula(context, input.formula.id);
    conformed = conformConfiguration(JSON.parse(formula.configuration), input.configuration);
  }
  const { configuration, errors } = conformed;
  if (Object.keys(errors).length > 0) {
    const contract = formula ? `the contract of formula ${formula.id}` : "the rules of a reactor's own configuration (strings)";
    throw new ValidationError(`The configuration does not satisfy ${contract}: ${Object.keys(errors).join(", ")}`, errors);
  }
  if (input.application) await requireActingApplication(context, input.application.id);
  return { formula, code: input.code ?? null, configuration };
}

const formulaChanged = (formulaId: string) =>
  new ConflictError(`Reactor formula ${formulaId} changed while the reactor was being saved; retry`);

/** The script of a reactor with its own code. */
const ownScript = (row: { id: string; tenantId: string }): ScriptOwner => scriptOwnerOf(row);

/** A reactor's own code is checked by the sandbox and published before the row holds it, so a saved reactor can always run. */
export async function createReactor(context: TenantContext, principal: Principal, input: ReactorInput): Promise<ReactorResponse> {
  const { formula, code, configuration } = await checkInput(context, input as ReactorSave);
  const keys = await context.keys();
  const id = crypto.randomUUID();
  if (code !== null) await context.sandbox.publish(ownScript({ id, tenantId: principal.tenantId }), code);
  const row: ReactorRow = {
    id,
    tenantId: principal.tenantId,
    name: input.name,
    formulaId: formula?.id ?? null,
    code,
    configuration: await encryptConfiguration(keys, id, configuration),
    applicationId: input.application?.id ?? null,
    createdBy: principal.applicationId,
    createdAt: Date.now(),
    modifiedBy: null,
    modifiedAt: null,
  };
  const inserted = await context.withControlMark({ id }, (mark) => storage.insertReactor(context.control, row, formula, mark));
  if (!inserted) throw formulaChanged(formula!.id);
  context.audit.describe({ entityId: id, event: { type: "reactor.created", data: reactorEventData(row) } });
  return toReactorResponse(keys, row, formula, await applicationOf(context, row));
}

/**
 * The answer to a POST /reactors whose write was committed and whose answer was never saved: the
 * reactor as it was created; a 409 when it no longer exists (deleted since, or undone as its formula
 * changed while it was saved, which the first attempt answered), or was changed since: a
 * configuration replaced since is for a read (reactor:read) to show, not for its creator's retry.
 */
export const answerCommittedCreate = async (context: TenantContext, principal: Principal, outcome: unknown) => {
  const { id } = outcome as { id: string };
  const row = await storage.findReactor(context.control, context.tenantId, id);
  if (!row) throw ConflictError.processed("the reactor it created no longer exists");
  if (row.modifiedAt !== null) {
    throw ConflictError.processed("the reactor it created was changed since: read it");
  }
  context.audit.describe({ entityId: id, event: { type: "reactor.created", data: reactorEventData(row) } });
  return { status: 201, body: await getReactor(context, principal, id) };
};

/** A reactor as webhook events describe it: never its configuration or code. */
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
  const formula = row.formulaId === null ? null : await findFormula(context, row.formulaId);
  return toReactorResponse(await context.keys(), row, formula, await applicationOf(context, row));
}

export async function listReactors(context: TenantContext, _principal: Principal, filter: ListFilter): Promise<Page<ReactorResponse>> {
  const { rows, total } = await storage.reactorsPage(context.control, context.tenantId, filter);
  const formulaIds = [...new Set(rows.flatMap((row) => (row.formulaId === null ? [] : [row.formulaId])))];
  const formulas = await storage.visibleFormulasAmong(context.control, context.tenantId, formulaIds);
  const formulaById = new Map(formulas.map((formula) => [formula.id, formula]));
  const applicationIds = rows.flatMap((row) => (row.applicationId === null ? [] : [row.applicationId]));
  const applicationById = await applicationsById(context, applicationIds);
  const keys = await context.keys();
  const data = await Promise.all(
    rows.map((row) =>
      toReactorResponse(
        keys,
        row,
        row.formulaId === null ? null : formulaById.get(row.formulaId)!,
        (row.applicationId && applicationById.get(row.applicationId)) || null,
      ),
    ),
  );
  return pageOf(data, total, filter.page, filter.size);
}

/** Saves the whole reactor, checked as on creation; one of a formula against the formula version it was checked with. */
async function saveReactor(
  context: TenantContext,
  principal: Principal,
  existing: ReactorRow,
  input: ReactorSave,
): Promise<ReactorResponse> {
  const { id } = existing;
  const { formula, code, configuration } = await checkInput(context, input);
  const keys = await context.keys();
  if (code !== null) await context.sandbox.publish(ownScript(existing), code);
  const changes = {
    name: input.name,
    formulaId: formula?.id ?? null,
    code,
    configuration: await encryptConfiguration(keys, id, configuration),
    applicationId: input.application?.id ?? null,
    modifiedBy: principal.applicationId,
    modifiedAt: nextVersion(existing),
  };
  const row = await storage.updateReactor(context.control, context.tenantId, id, changes, formula);
  if (!row) {
    await findReactor(context, id);
    throw formulaChanged(formula!.id);
  }
  context.audit.describe({ event: { type: "reactor.updated", data: reactorEventData(row) } });
  return toReactorResponse(keys, row, formula, await applicationOf(context, row));
}

/** What the reactor runs now, as a body names it: without formula and code in a body, it keeps this. */
const programOf = (row: ReactorRow): Pick<ReactorSave, "formula" | "code"> =>
  row.code === null ? { formula: { id: row.formulaId! } } : { code: row.code };

/** PUT: the body replaces the reactor; without formula and code (the original interface's update of a formula reactor) it keeps what it runs. */
export async function replaceReactor(context: TenantContext, principal: Principal, id: string, input: ReactorReplacement) {
  const existing = await findReactor(context, id);
  const program = input.formula ? { formula: input.formula } : input.code !== undefined ? { code: input.code } : programOf(existing);
  return saveReactor(context, principal, existing, { ...input, ...program } as ReactorSave);
}

/**
 * RFC 7396 over the stored reactor: configuration merges per name (null removes one), the rest
 * replaces; `formula` or `code` replaces what the reactor runs.
 */
export async function patchReactor(context: TenantContext, principal: Principal, id: string, patch: ReactorPatch) {
  const existing = await findReactor(context, id);
  const stored = await decryptConfiguration(await context.keys(), existing);
  const configuration = applyMergePatch(stored, patch.configuration ?? {}) as Configuration;
  const program = patch.formula ? { formula: patch.formula } : patch.code !== undefined ? { code: patch.code } : programOf(existing);
  return saveReactor(context, principal, existing, {
    name: patch.name ?? existing.name,
    ...program,
    runtime: patch.runtime,
    configuration,
    application: patch.application === undefined ? (existing.applicationId ? { id: existing.applicationId } : null) : patch.application,
  } as ReactorSave);
}

/** The code a reactor of its own code or a formula runs now (null: gone, or none): what the sandbox's cron keeps. */
export function currentReactorCode(control: Database, owner: ScriptOwner): Promise<string | null> {
  if (owner.kind !== "reactor") return Promise.resolve(null);
  return storage.codeOfScriptOwner(control, owner.tenantId, owner.id);
}

export async function deleteReactor(context: TenantContext, _principal: Principal, id: string): Promise<void> {
  const deleted = await storage.deleteReactor(context.control, context.tenantId, id);
  if (!deleted) throw new NotFoundError(`Reactor ${id}`);
  context.audit.describe({ event: { type: "reactor.deleted", data: { reactor: { id } } } });
}

/** A reactor ready to run: what it runs, its contract (a formula's; none for its own code) and its application. */
export interface RunnableReactor {
  reactor: ReactorRow;
  /** The script: the formula's, or the reactor's own. */
  owner: ScriptOwner;
  code: string;
  /** Null for a reactor with its own code: its configuration is handed over as stored. */
  configurationContract: ConfigurationElement[] | null;
  requestParameters: RequestParameter[];
  /** Named in errors: whose contract the configuration no longer satisfies. */
  formulaId: string | null;
  application: Principal | null;
}

/**
 * Runs the reactor next to the data: args are detokenized as the caller may use them, checked
 * against the request parameters, handed to the code with the configuration, and the code's
 * `tokenize` output is tokenized with the reactor's application, all or nothing.
 */
export async function react(context: TenantContext, principal: Principal, id: string, args: Record<string, unknown>): Promise<ReactResult> {
  const { runnable, args: checked } = await prepareReaction(context, principal, id, args);
  return runReaction(context, runnable, checked);
}

/**
 * What a reaction does before the code runs, in the caller's request: the reactor must be runnable
 * and its configuration still fit, and the args are detokenized with the caller's token:use and
 * checked against the request parameters.
 */
export async function prepareReaction(context: TenantContext, principal: Principal, id: string, args: Record<string, unknown>) {
  const runnable = await findRunnableReactor(context, id);
  await currentConfiguration(context, runnable);
  // Detokenized as the body's `args` member, so that errors name paths like args.card.number.
  const detokenized = ((await detokenizeJson(context, principal, { args })) as { args: Record<string, unknown> }).args;
  return { runnable, args: conformArgs(runnable.requestParameters, detokenized) };
}

/** Runs the reactor's code on args already detokenized, and tokenizes its `tokenize` output. */
export async function runReaction(context: TenantContext, runnable: RunnableReactor, args: Record<string, unknown>): Promise<ReactResult> {
  const configuration = await currentConfiguration(context, runnable);
  // A script of kind "reactor" always yields a ReactorResult.
  const output = (await context.sandbox.run({
    owner: runnable.owner,
    code: runnable.code,
    input: { args: conformArgs(runnable.requestParameters, args), configuration },
    application: runnable.application,
  })) as ReactorResult;
  return { tokens: await tokenizeOutput(context, runnable, output.tokenize), raw: output.raw ?? null };
}

/** The reactor with what it runs and the principal of its application, in one query: react is on the hot path. */
export async function findRunnableReactor(context: TenantContext, id: string): Promise<RunnableReactor> {
  await ensureOfficialFormulas(context);
  const found = await storage.runnableReactor(context.control, context.tenantId, id);
  if (!found || (found.reactor.formulaId !== null && found.formula === null)) throw new NotFoundError(`Reactor ${id}`);
  const { reactor, formula } = found;
  if (formula?.status === "coming_soon") {
    throw new ConflictError(`Reactor formula ${formula.id} is coming_soon: its reactors cannot run until it is verified again`);
  }
  if (reactor.applicationId !== null && found.application === null) {
    throw new ConflictError(`Reactor ${reactor.id}'s application ${reactor.applicationId} no longer exists; update the reactor`);
  }
  const application = found.application && principalOf(found.application);
  if (!formula) {
    const owner = ownScript(reactor);
    return { reactor, owner, code: reactor.code!, configurationContract: null, requestParameters: [], formulaId: null, application };
  }
  return {
    reactor,
    owner: scriptOwnerOf(formula),
    code: formula.code,
    configurationContract: JSON.parse(formula.configuration),
    requestParameters: JSON.parse(formula.requestParameters),
    formulaId: formula.id,
    application,
  };
}

/**
 * The stored configuration, checked again against the formula as it is now: an official formula
 * changes with releases, and a reactor it no longer fits fails clearly instead of running half-configured.
 */
async function currentConfiguration(context: TenantContext, runnable: RunnableReactor): Promise<Configuration> {
  const { reactor, configurationContract } = runnable;
  const stored = await decryptConfiguration(await context.keys(), reactor);
  if (configurationContract === null) return stored;
  const { configuration, errors } = conformConfiguration(configurationContract, stored);
  if (Object.keys(errors).length > 0) {
    throw new ConflictError(
      `Reactor ${reactor.id}'s configuration no longer satisfies formula ${runnable.formulaId} (${describeFieldErrors(errors)}); update the reactor`,
    );
  }
  return configuration;
}

async function tokenizeOutput(context: TenantContext, runnable: RunnableReactor, payload: unknown) {
  if (payload === undefined || payload === null) return null;
  if (!runnable.application) {
    throw new ConflictError(
      `The reactor returned tokenize, but reactor ${runnable.reactor.id} has no application to tokenize with; set one with token:create`,
    );
  }
  // Awaited, not handed on: workerd reports a promise that rejects before anyone awaits it as unhandled.
  return await tokenize(context, runnable.application, payload);
}
