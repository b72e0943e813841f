import { and, asc, count, desc, eq, isNull, notExists, or, sql, type SQL } from "drizzle-orm";
import type { Principal } from "../auth/access";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { databaseOf } from "../db/client";
import { nameMatches } from "../db/filters";
import { reactorFormulas, reactors } from "../db/schema";
import type { Bindings } from "../env";
import { ConflictError, ForbiddenError, NotFoundError } from "../http/problem";
import { auditFieldsOf, pageOf, type Page } from "../http/schemas";
import { publishScript, unpublishScript, validateCode } from "../sandbox";
import { tenantKeysOf } from "../crypto/tenant-keys";
import { decryptConfiguration } from "./configuration";
import { conformConfiguration, describeFieldErrors } from "./contract";
import { ensureOfficialFormulas } from "./official/seed";
import type { FormulaInput, FormulaResponse } from "./schema";
import { scriptOwnerOf } from "./script-owner";
import { selectPage } from "../db/pages";

export type FormulaRow = typeof reactorFormulas.$inferSelect;

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

/** A tenant sees the official formulas (tenant_id NULL) and its own. */
export const visibleTo = (tenantId: string | SQLiteColumn) =>
  or(eq(reactorFormulas.tenantId, tenantId), isNull(reactorFormulas.tenantId))!;

/** Grows whenever the row is saved: reactors are written only against the formula version they were checked with. */
export const versionOf = (row: { createdAt: number; modifiedAt: number | null }) => row.modifiedAt ?? row.createdAt;

/** The modification time of a save: strictly after the previous version, even within one millisecond. */
export const nextVersion = (row: { createdAt: number; modifiedAt: number | null }) => Math.max(Date.now(), versionOf(row) + 1);

/** The formula if the tenant may see it (official or its own); 404 otherwise, never 403. */
export async function findFormula(env: Bindings, tenantId: string, id: string): Promise<FormulaRow> {
  await ensureOfficialFormulas(env);
  const [row] = await databaseOf(env)
    .select()
    .from(reactorFormulas)
    .where(and(visibleTo(tenantId), eq(reactorFormulas.id, id)))
    .limit(1);
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
export async function createFormula(env: Bindings, principal: Principal, input: FormulaInput): Promise<FormulaResponse> {
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
  await publishScript(env, scriptOwnerOf(row), row.code);
  await databaseOf(env).insert(reactorFormulas).values(row);
  return toFormulaResponse(row);
}

export async function getFormula(env: Bindings, principal: Principal, id: string): Promise<FormulaResponse> {
  return toFormulaResponse(await findFormula(env, principal.tenantId, id));
}

/** Official formulas first, then the tenant's own, newest first. */
export async function listFormulas(
  env: Bindings,
  principal: Principal,
  filter: { name?: string; page: number; size: number },
): Promise<Page<FormulaResponse>> {
  await ensureOfficialFormulas(env);
  const conditions: SQL[] = [visibleTo(principal.tenantId)];
  if (filter.name) conditions.push(nameMatches(reactorFormulas.name, filter.name));
  const where = and(...conditions);
  const db = databaseOf(env);
  const { rows, total } = await selectPage(db, reactorFormulas, where, [sql`${reactorFormulas.tenantId} IS NULL DESC`, desc(reactorFormulas.createdAt), asc(reactorFormulas.name), desc(reactorFormulas.id)], filter);
  return pageOf(rows.map(toFormulaResponse), total, filter.page, filter.size);
}

/** The formula's reactors as the update saw them: the update applies only if they are still the same. */
function reactorsUnchanged(tenantId: string, formulaId: string, seen: { count: number; latest: number }): SQL {
  const ofFormula = sql`${reactors.tenantId} = ${tenantId} AND ${reactors.formulaId} = ${formulaId}`;
  return sql`(SELECT count(*) FROM ${reactors} WHERE ${ofFormula}) = ${seen.count}
    AND (SELECT coalesce(max(coalesce(${reactors.modifiedAt}, ${reactors.createdAt})), 0) FROM ${reactors} WHERE ${ofFormula}) = ${seen.latest}`;
}

/**
 * A contract change that the configuration of an existing reactor would not satisfy is a 409 naming
 * those reactors: they must be updated (or deleted) first, so no reactor breaks silently.
 */
async function refuseBreakingReactors(env: Bindings, tenantId: string, formulaId: string, contract: FormulaInput["configuration"]) {
  const rows = await databaseOf(env)
    .select()
    .from(reactors)
    .where(and(eq(reactors.tenantId, tenantId), eq(reactors.formulaId, formulaId)));
  const keys = await tenantKeysOf(env, tenantId);
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
  env: Bindings,
  principal: Principal,
  id: string,
  input: FormulaInput,
): Promise<FormulaResponse> {
  const existing = await findFormula(env, principal.tenantId, id);
  if (existing.tenantId === null) refuseOfficial("changed");
  if (input.type === "official") refuseOfficial("created by tenants");
  validateCode(input.code, "code");
  const seen = await refuseBreakingReactors(env, principal.tenantId, id, input.configuration);
  await publishScript(env, scriptOwnerOf(existing), input.code);
  const [row] = await databaseOf(env)
    .update(reactorFormulas)
    .set({ ...columnsOf(input), modifiedBy: principal.applicationId, modifiedAt: nextVersion(existing) })
    .where(and(eq(reactorFormulas.tenantId, principal.tenantId), eq(reactorFormulas.id, id), reactorsUnchanged(principal.tenantId, id, seen)))
    .returning();
  if (!row) {
    // The published script must keep matching the stored formula.
    await publishScript(env, scriptOwnerOf(existing), existing.code);
    throw new ConflictError(`Reactor formula ${id} or its reactors changed during the update; retry it`);
  }
  return toFormulaResponse(row);
}

/** Deleting a formula that reactors still use is a 409 naming them (checked in the same statement). */
export async function deleteFormula(env: Bindings, principal: Principal, id: string): Promise<void> {
  const existing = await findFormula(env, principal.tenantId, id);
  if (existing.tenantId === null) refuseOfficial("deleted");
  const db = databaseOf(env);
  const ofFormula = and(eq(reactors.tenantId, principal.tenantId), eq(reactors.formulaId, id));
  const deleted = await db
    .delete(reactorFormulas)
    .where(
      and(
        eq(reactorFormulas.tenantId, principal.tenantId),
        eq(reactorFormulas.id, id),
        notExists(db.select({ id: reactors.id }).from(reactors).where(ofFormula)),
      ),
    )
    .returning({ id: reactorFormulas.id });
  if (deleted.length === 0) {
    const users = await db.select({ id: reactors.id, name: reactors.name }).from(reactors).where(ofFormula).limit(10);
    if (users.length === 0) throw new NotFoundError(`Reactor formula ${id}`);
    throw new ConflictError(
      `Reactor formula ${id} is used by reactors ${users.map((reactor) => `${reactor.name} (${reactor.id})`).join(", ")}; delete them first`,
    );
  }
  await unpublishScript(env, scriptOwnerOf(existing));
}
