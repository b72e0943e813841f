import { and, desc, eq, inArray, sql, type SQL } from "drizzle-orm";
import { applicationsById } from "../applications/service";
import type { ApplicationResponse } from "../applications/schema";
import type { Principal } from "../auth/access";
import { principalColumns, principalForApplication, principalOf } from "../auth/service";
import { tenantKeysOf, type TenantKeys } from "../crypto/tenant-keys";
import { databaseOf } from "../db/client";
import { nameMatches } from "../db/filters";
import { applications, reactorFormulas, reactors } from "../db/schema";
import type { Bindings } from "../env";
import { ConflictError, NotFoundError, ValidationError } from "../http/problem";
import { auditFieldsOf, pageOf, type Page } from "../http/schemas";
import { runScript, type ReactorResult } from "../sandbox";
import { detokenizeJson } from "../tokens/detokenize";
import { tokenize } from "../tokens/service";
import { decryptConfiguration, encryptConfiguration } from "./configuration";
import { conformArgs, conformConfiguration, describeFieldErrors, type Configuration } from "./contract";
import { findFormula, nextVersion, toFormulaResponse, versionOf, visibleTo, type FormulaRow } from "./formulas";
import { ensureOfficialFormulas } from "./official/seed";
import type { ReactorInput, ReactorPatch, ReactorReplacement, ReactorResponse, ReactResult } from "./schema";
import { scriptOwnerOf } from "./script-owner";
import { selectPage } from "../db/pages";
import { applyMergePatch } from "../http/json";

type ReactorRow = typeof reactors.$inferSelect;

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
async function applicationOf(env: Bindings, row: ReactorRow): Promise<ApplicationResponse | null> {
  if (row.applicationId === null) return null;
  return (await applicationsById(databaseOf(env), row.tenantId, [row.applicationId])).get(row.applicationId) ?? null;
}

/** A formula a reactor can be made from: visible to the tenant and generally available. */
async function usableFormula(env: Bindings, tenantId: string, formulaId: string): Promise<FormulaRow> {
  const formula = await findFormula(env, tenantId, formulaId).catch((error: unknown) => {
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

async function checkApplication(env: Bindings, tenantId: string, application: ReactorInput["application"]): Promise<void> {
  if (!application) return;
  const principal = await principalForApplication(databaseOf(env), tenantId, application.id);
  if (!principal || principal.applicationType === "management") {
    throw ValidationError.field("application.id", "must be a public or private application of this tenant");
  }
}

/** Everything the schema cannot decide alone: the formula, its configuration contract, the application. */
async function checkInput(env: Bindings, tenantId: string, input: ReactorInput) {
  const formula = await usableFormula(env, tenantId, input.formula.id);
  const contract = JSON.parse(formula.configuration);
  const { configuration, errors } = conformConfiguration(contract, input.configuration);
  if (Object.keys(errors).length > 0) {
    throw new ValidationError(
      `The configuration does not satisfy the contract of formula ${formula.id}: ${Object.keys(errors).join(", ")}`,
      errors,
    );
  }
  await checkApplication(env, tenantId, input.application);
  return { formula, configuration };
}

/** True while the formula is still the version the reactor was checked against. */
function formulaUnchanged(formula: FormulaRow): SQL {
  return sql`EXISTS (SELECT 1 FROM ${reactorFormulas} WHERE ${reactorFormulas.id} = ${formula.id}
    AND coalesce(${reactorFormulas.modifiedAt}, ${reactorFormulas.createdAt}) = ${versionOf(formula)})`;
}

const formulaChanged = (formulaId: string) =>
  new ConflictError(`Reactor formula ${formulaId} changed while the reactor was being saved; retry`);

export async function createReactor(env: Bindings, principal: Principal, input: ReactorInput): Promise<ReactorResponse> {
  const { formula, configuration } = await checkInput(env, principal.tenantId, input);
  const keys = await tenantKeysOf(env, principal.tenantId);
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
  // The insert is undone in the same transaction if the formula changed since it was checked.
  const db = databaseOf(env);
  const [, undone] = await db.batch([
    db.insert(reactors).values(row),
    db
      .delete(reactors)
      .where(and(eq(reactors.tenantId, row.tenantId), eq(reactors.id, id), sql`NOT ${formulaUnchanged(formula)}`))
      .returning({ id: reactors.id }),
  ]);
  if (undone.length > 0) throw formulaChanged(formula.id);
  return toReactorResponse(keys, row, formula, await applicationOf(env, row));
}

async function findReactor(env: Bindings, tenantId: string, id: string): Promise<ReactorRow> {
  const [row] = await databaseOf(env)
    .select()
    .from(reactors)
    .where(and(eq(reactors.tenantId, tenantId), eq(reactors.id, id)))
    .limit(1);
  if (!row) throw new NotFoundError(`Reactor ${id}`);
  return row;
}

export async function getReactor(env: Bindings, principal: Principal, id: string): Promise<ReactorResponse> {
  const row = await findReactor(env, principal.tenantId, id);
  const formula = await findFormula(env, principal.tenantId, row.formulaId);
  return toReactorResponse(await tenantKeysOf(env, principal.tenantId), row, formula, await applicationOf(env, row));
}

export async function listReactors(
  env: Bindings,
  principal: Principal,
  filter: { id: string[]; name?: string; page: number; size: number },
): Promise<Page<ReactorResponse>> {
  const conditions: SQL[] = [eq(reactors.tenantId, principal.tenantId)];
  if (filter.id.length > 0) conditions.push(inArray(reactors.id, filter.id));
  if (filter.name) conditions.push(nameMatches(reactors.name, filter.name));
  const where = and(...conditions);
  const db = databaseOf(env);
  const { rows, total } = await selectPage(db, reactors, where, [desc(reactors.createdAt), desc(reactors.id)], filter);
  const formulaIds = [...new Set(rows.map((row) => row.formulaId))];
  const formulas =
    formulaIds.length === 0
      ? []
      : await db
          .select()
          .from(reactorFormulas)
          .where(and(visibleTo(principal.tenantId), inArray(reactorFormulas.id, formulaIds)));
  const formulaById = new Map(formulas.map((formula) => [formula.id, formula]));
  const applicationIds = rows.flatMap((row) => (row.applicationId === null ? [] : [row.applicationId]));
  const applicationById = await applicationsById(db, principal.tenantId, applicationIds);
  const keys = await tenantKeysOf(env, principal.tenantId);
  const data = await Promise.all(
    rows.map((row) =>
      toReactorResponse(keys, row, formulaById.get(row.formulaId)!, (row.applicationId && applicationById.get(row.applicationId)) || null),
    ),
  );
  return pageOf(data, total, filter.page, filter.size);
}

/** Saves the whole reactor, checked as on creation, against the formula version it was checked with. */
async function saveReactor(env: Bindings, principal: Principal, existing: ReactorRow, input: ReactorInput): Promise<ReactorResponse> {
  const { id } = existing;
  const { formula, configuration } = await checkInput(env, principal.tenantId, input);
  const keys = await tenantKeysOf(env, principal.tenantId);
  const [row] = await databaseOf(env)
    .update(reactors)
    .set({
      name: input.name,
      formulaId: formula.id,
      configuration: await encryptConfiguration(keys, id, configuration),
      applicationId: input.application?.id ?? null,
      modifiedBy: principal.applicationId,
      modifiedAt: nextVersion(existing),
    })
    .where(and(eq(reactors.tenantId, principal.tenantId), eq(reactors.id, id), formulaUnchanged(formula)))
    .returning();
  if (!row) {
    await findReactor(env, principal.tenantId, id);
    throw formulaChanged(formula.id);
  }
  return toReactorResponse(keys, row, formula, await applicationOf(env, row));
}

/** The original interface's update sends no formula: the reactor then keeps its own. */
export async function replaceReactor(env: Bindings, principal: Principal, id: string, input: ReactorReplacement) {
  const existing = await findReactor(env, principal.tenantId, id);
  return saveReactor(env, principal, existing, { ...input, formula: input.formula ?? { id: existing.formulaId } });
}

/** RFC 7396 over the stored reactor: configuration merges per name (null removes one), the rest replaces. */
export async function patchReactor(env: Bindings, principal: Principal, id: string, patch: ReactorPatch) {
  const existing = await findReactor(env, principal.tenantId, id);
  const stored = await decryptConfiguration(await tenantKeysOf(env, principal.tenantId), existing);
  const configuration = applyMergePatch(stored, patch.configuration ?? {}) as Configuration;
  return saveReactor(env, principal, existing, {
    name: patch.name ?? existing.name,
    formula: patch.formula ?? { id: existing.formulaId },
    configuration,
    application: patch.application === undefined ? (existing.applicationId ? { id: existing.applicationId } : null) : patch.application,
  });
}

export async function deleteReactor(env: Bindings, principal: Principal, id: string): Promise<void> {
  const deleted = await databaseOf(env)
    .delete(reactors)
    .where(and(eq(reactors.tenantId, principal.tenantId), eq(reactors.id, id)))
    .returning({ id: reactors.id });
  if (deleted.length === 0) throw new NotFoundError(`Reactor ${id}`);
}

/**
 * Runs the reactor's formula next to the data: args are detokenized as the caller may use them,
 * checked against the request parameters, handed to the code with the configuration, and the code's
 * `tokenize` output is tokenized with the reactor's application, all or nothing.
 */
export async function react(env: Bindings, principal: Principal, id: string, args: Record<string, unknown>): Promise<ReactResult> {
  const { reactor, formula, application } = await findRunnableReactor(env, principal.tenantId, id);
  const configuration = await currentConfiguration(env, reactor, formula);
  // Detokenized as the body's `args` member, so that errors name paths like args.card.number.
  const detokenized = ((await detokenizeJson(env, principal, { args })) as { args: Record<string, unknown> }).args;
  // A script of kind "reactor" always yields a ReactorResult.
  const output = (await runScript(env, {
    owner: scriptOwnerOf(formula),
    code: formula.code,
    input: { args: conformArgs(JSON.parse(formula.requestParameters), detokenized), configuration },
    application,
  })) as ReactorResult;
  return { tokens: await tokenizeOutput(env, reactor, application, output.tokenize), raw: output.raw ?? null };
}

/** The reactor with its formula and the principal of its application, in one query: react is on the hot path. */
async function findRunnableReactor(env: Bindings, tenantId: string, id: string) {
  await ensureOfficialFormulas(env);
  const [found] = await databaseOf(env)
    .select({
      reactor: reactors,
      formula: reactorFormulas,
      application: principalColumns,
    })
    .from(reactors)
    .innerJoin(reactorFormulas, and(eq(reactorFormulas.id, reactors.formulaId), visibleTo(reactors.tenantId)))
    .leftJoin(applications, and(eq(applications.tenantId, reactors.tenantId), eq(applications.id, reactors.applicationId)))
    .where(and(eq(reactors.tenantId, tenantId), eq(reactors.id, id)))
    .limit(1);
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
async function currentConfiguration(env: Bindings, reactor: ReactorRow, formula: FormulaRow): Promise<Configuration> {
  const stored = await decryptConfiguration(await tenantKeysOf(env, reactor.tenantId), reactor);
  const { configuration, errors } = conformConfiguration(JSON.parse(formula.configuration), stored);
  if (Object.keys(errors).length > 0) {
    throw new ConflictError(
      `Reactor ${reactor.id}'s configuration no longer satisfies formula ${formula.id} (${describeFieldErrors(errors)}); update the reactor`,
    );
  }
  return configuration;
}

async function tokenizeOutput(env: Bindings, reactor: ReactorRow, application: Principal | null, payload: unknown) {
  if (payload === undefined || payload === null) return null;
  if (!application) {
    throw new ConflictError(
      `The formula returned tokenize, but reactor ${reactor.id} has no application to tokenize with; set one with token:create`,
    );
  }
  // Awaited, not handed on: workerd reports a promise that rejects before anyone awaits it as unhandled.
  return await tokenize(env, application, payload);
}
