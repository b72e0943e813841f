import type { TenantContext } from "../../context";
import { scriptOwnerOf } from "../script-owner";
import type { FormulaRow, OfficialColumns } from "../storage";
import * as storage from "../storage";
import { OFFICIAL_FORMULAS, type OfficialFormula } from "./index";

function columnsOf(formula: OfficialFormula): OfficialColumns {
  return {
    name: formula.name,
    description: formula.description,
    status: formula.status,
    icon: null,
    code: formula.code,
    configuration: JSON.stringify(formula.configuration),
    requestParameters: JSON.stringify(formula.request_parameters),
  };
}

function differs(stored: FormulaRow | undefined, formula: OfficialFormula): boolean {
  if (!stored) return true;
  const shipped = columnsOf(formula);
  return (Object.keys(shipped) as (keyof typeof shipped)[]).some((column) => stored[column] !== shipped[column]);
}

/** Databases whose official formulas this isolate has made current (settled only: see ensureOfficialFormulas). */
const seeded = new WeakSet<D1Database>();

/**
 * Makes the official formulas in the database match the ones in this repository, once per isolate
 * and database, before the first formula is read. Ids are fixed, so concurrent isolates and later
 * releases converge on the same rows, and reactors keep pointing at them.
 */
export async function ensureOfficialFormulas(context: TenantContext): Promise<void> {
  const database = context.control.$client;
  // Requests that arrive before the first seeding has finished each run it (the rows converge)
  // rather than wait on another request's (docs/architecture.md, "Isolate-wide state").
  if (seeded.has(database)) return;
  await seedOfficialFormulas(context);
  seeded.add(database);
}

async function seedOfficialFormulas(context: TenantContext): Promise<void> {
  const stored = new Map((await storage.officialFormulas(context.control)).map((row) => [row.id, row]));
  const changed = OFFICIAL_FORMULAS.filter((formula) => differs(stored.get(formula.id), formula));
  if (changed.length === 0) return;
  // Published first: if publishing fails, the rows stay as they were and the next isolate retries.
  for (const formula of changed) {
    if (stored.get(formula.id)?.code !== formula.code) {
      await context.sandbox.publish(scriptOwnerOf({ id: formula.id, tenantId: null }), formula.code);
    }
  }
  await storage.upsertOfficialFormulas(
    context.control,
    changed.map((formula) => ({ id: formula.id, columns: columnsOf(formula) })),
    Date.now(),
  );
}
