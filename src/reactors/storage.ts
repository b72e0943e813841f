import { and, asc, desc, eq, inArray, isNull, notExists, or, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { type PrincipalColumns, principalColumns } from "../auth/storage";
import type { Database } from "../db/client";
import { type MarkQuery, marked } from "../db/commit-marks";
import { applications, reactorFormulas, reactors } from "../db/control-tables";
import { nameMatches } from "../db/filters";
import { namedResourcesPage, selectPage } from "../db/pages";
import type { ListFilter } from "../http/schemas";

export type FormulaRow = typeof reactorFormulas.$inferSelect;
export type ReactorRow = typeof reactors.$inferSelect;

/** A tenant sees the official formulas (tenant_id NULL) and its own. */
const visibleTo = (tenantId: string | SQLiteColumn) => or(eq(reactorFormulas.tenantId, tenantId), isNull(reactorFormulas.tenantId))!;

/** Grows whenever the row is saved: reactors are written only against the formula version they were checked with. */
export const versionOf = (row: { createdAt: number; modifiedAt: number | null }) => row.modifiedAt ?? row.createdAt;

const reactor = (tenantId: string, id: string) => and(eq(reactors.tenantId, tenantId), eq(reactors.id, id));
const reactorsOf = (tenantId: string, formulaId: string) => and(eq(reactors.tenantId, tenantId), eq(reactors.formulaId, formulaId));
const ownFormula = (tenantId: string, id: string) => and(eq(reactorFormulas.tenantId, tenantId), eq(reactorFormulas.id, id));

/** True while the formula is still the version the reactor was checked against. */
function formulaUnchanged(formula: FormulaRow): SQL {
  return sql`EXISTS (SELECT 1 FROM ${reactorFormulas} WHERE ${reactorFormulas.id} = ${formula.id}
    AND coalesce(${reactorFormulas.modifiedAt}, ${reactorFormulas.createdAt}) = ${versionOf(formula)})`;
}

/** The formula's reactors as an update saw them: the update applies only if they are still the same. */
function reactorsUnchanged(tenantId: string, formulaId: string, seen: { count: number; latest: number }): SQL {
  const ofFormula = sql`${reactors.tenantId} = ${tenantId} AND ${reactors.formulaId} = ${formulaId}`;
  return sql`(SELECT count(*) FROM ${reactors} WHERE ${ofFormula}) = ${seen.count}
    AND (SELECT coalesce(max(coalesce(${reactors.modifiedAt}, ${reactors.createdAt})), 0) FROM ${reactors} WHERE ${ofFormula}) = ${seen.latest}`;
}

// Formulas

export async function findVisibleFormula(db: Database, tenantId: string, id: string): Promise<FormulaRow | undefined> {
  const [row] = await db
    .select()
    .from(reactorFormulas)
    .where(and(visibleTo(tenantId), eq(reactorFormulas.id, id)))
    .limit(1);
  return row;
}

export function visibleFormulasAmong(db: Database, tenantId: string, ids: string[]): Promise<FormulaRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .select()
    .from(reactorFormulas)
    .where(and(visibleTo(tenantId), inArray(reactorFormulas.id, ids)));
}

/** The formula, with the commit mark of the request's idempotency claim (when it has one), both or neither. */
export async function insertFormula(db: Database, row: FormulaRow, mark: MarkQuery | null = null): Promise<void> {
  await db.batch([db.insert(reactorFormulas).values(row), ...marked(db, mark)]);
}

/** Official formulas first, then the tenant's own, newest first. */
export function formulasPage(db: Database, tenantId: string, filter: Omit<ListFilter, "id">) {
  const conditions: SQL[] = [visibleTo(tenantId)];
  if (filter.name) conditions.push(nameMatches(reactorFormulas.name, filter.name));
  const order = [
    sql`${reactorFormulas.tenantId} IS NULL DESC`,
    desc(reactorFormulas.createdAt),
    asc(reactorFormulas.name),
    desc(reactorFormulas.id),
  ];
  return selectPage(db, reactorFormulas, and(...conditions), order, filter);
}

export function reactorsOfFormula(db: Database, tenantId: string, formulaId: string): Promise<ReactorRow[]> {
  return db.select().from(reactors).where(reactorsOf(tenantId, formulaId));
}

/** Saves the tenant's formula unless its reactors changed since `seen`; undefined when they did (or it is gone). */
export async function updateFormula(
  db: Database,
  tenantId: string,
  id: string,
  changes: Partial<FormulaRow>,
  seen: { count: number; latest: number },
): Promise<FormulaRow | undefined> {
  const [row] = await db
    .update(reactorFormulas)
    .set(changes)
    .where(and(ownFormula(tenantId, id), reactorsUnchanged(tenantId, id, seen)))
    .returning();
  return row;
}

/** Deletes the tenant's formula unless a reactor uses it (checked in the same statement); whether it was deleted. */
export async function deleteUnusedFormula(db: Database, tenantId: string, id: string): Promise<boolean> {
  const deleted = await db
    .delete(reactorFormulas)
    .where(and(ownFormula(tenantId, id), notExists(db.select({ id: reactors.id }).from(reactors).where(reactorsOf(tenantId, id)))))
    .returning({ id: reactorFormulas.id });
  return deleted.length > 0;
}

/** Up to `limit` reactors made from the formula, to name them. */
export function reactorsUsing(db: Database, tenantId: string, formulaId: string, limit: number) {
  return db.select({ id: reactors.id, name: reactors.name }).from(reactors).where(reactorsOf(tenantId, formulaId)).limit(limit);
}

export function officialFormulas(db: Database): Promise<FormulaRow[]> {
  return db.select().from(reactorFormulas).where(isNull(reactorFormulas.tenantId));
}

/** The columns of an official formula that a release may change. */
export type OfficialColumns = Pick<FormulaRow, "name" | "description" | "status" | "icon" | "code" | "configuration" | "requestParameters">;

/** Inserts or updates official formulas by their fixed ids, in one batch. */
export async function upsertOfficialFormulas(
  db: Database,
  formulas: { id: string; columns: OfficialColumns }[],
  now: number,
): Promise<void> {
  const statements = formulas.map(({ id, columns }) =>
    db
      .insert(reactorFormulas)
      .values({ id, tenantId: null, type: "official", ...columns, createdBy: null, createdAt: now })
      .onConflictDoUpdate({ target: reactorFormulas.id, set: { ...columns, modifiedAt: now }, setWhere: isNull(reactorFormulas.tenantId) }),
  );
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);
}

// Reactors

/**
 * Inserts the reactor. One of a formula is undone in the same transaction if the formula changed
 * since it was checked; whether it stayed.
 */
export async function insertReactor(
  db: Database,
  row: ReactorRow,
  formula: FormulaRow | null,
  mark: MarkQuery | null = null,
): Promise<boolean> {
  if (!formula) {
    await db.batch([db.insert(reactors).values(row), ...marked(db, mark)]);
    return true;
  }
  const [, undone] = await db.batch([
    db.insert(reactors).values(row),
    db
      .delete(reactors)
      .where(and(reactor(row.tenantId, row.id), sql`NOT ${formulaUnchanged(formula)}`))
      .returning({ id: reactors.id }),
    ...marked(db, mark),
  ]);
  return undone.length === 0;
}

/**
 * The code a script owner runs now: a reactor's own (null for one that runs a formula), else the
 * formula's of that id (an official one when `tenantId` is null); null when neither exists.
 */
export async function codeOfScriptOwner(db: Database, tenantId: string | null, id: string): Promise<string | null> {
  if (tenantId !== null) {
    const [own] = await db.select({ code: reactors.code }).from(reactors).where(reactor(tenantId, id)).limit(1);
    if (own) return own.code;
  }
  const ofTenant = tenantId === null ? isNull(reactorFormulas.tenantId) : eq(reactorFormulas.tenantId, tenantId);
  const [formula] = await db
    .select({ code: reactorFormulas.code })
    .from(reactorFormulas)
    .where(and(ofTenant, eq(reactorFormulas.id, id)))
    .limit(1);
  return formula?.code ?? null;
}

export async function findReactor(db: Database, tenantId: string, id: string): Promise<ReactorRow | undefined> {
  const [row] = await db.select().from(reactors).where(reactor(tenantId, id)).limit(1);
  return row;
}

export function reactorsPage(db: Database, tenantId: string, filter: ListFilter) {
  return namedResourcesPage(db, reactors, tenantId, filter);
}

/**
 * Saves the reactor; one that runs a formula only while the formula is the version it was checked
 * against. Undefined otherwise (or when it is gone).
 */
export async function updateReactor(
  db: Database,
  tenantId: string,
  id: string,
  changes: Pick<ReactorRow, "name" | "formulaId" | "code" | "configuration" | "applicationId" | "modifiedBy" | "modifiedAt">,
  formula: FormulaRow | null,
): Promise<ReactorRow | undefined> {
  const [row] = await db
    .update(reactors)
    .set(changes)
    .where(and(reactor(tenantId, id), formula ? formulaUnchanged(formula) : undefined))
    .returning();
  return row;
}

/** Deletes the reactor; what it ran (its own code, if any), or undefined when there was no such reactor. */
export async function deleteReactor(db: Database, tenantId: string, id: string): Promise<Pick<ReactorRow, "id" | "code"> | undefined> {
  const [deleted] = await db.delete(reactors).where(reactor(tenantId, id)).returning({ id: reactors.id, code: reactors.code });
  return deleted;
}

/**
 * The reactor with its formula (null for one with its own code) and its application's principal
 * columns, in one query: react is on the hot path.
 */
export async function runnableReactor(
  db: Database,
  tenantId: string,
  id: string,
): Promise<{ reactor: ReactorRow; formula: FormulaRow | null; application: PrincipalColumns | null } | undefined> {
  const [found] = await db
    .select({ reactor: reactors, formula: reactorFormulas, application: principalColumns })
    .from(reactors)
    .leftJoin(reactorFormulas, and(eq(reactorFormulas.id, reactors.formulaId), visibleTo(reactors.tenantId)))
    .leftJoin(applications, and(eq(applications.tenantId, reactors.tenantId), eq(applications.id, reactors.applicationId)))
    .where(reactor(tenantId, id))
    .limit(1);
  return found;
}
