import { isNull } from "drizzle-orm";
import { databaseOf } from "../../db/client";
import { reactorFormulas } from "../../db/schema";
import type { Bindings } from "../../env";
import { publishScript } from "../../sandbox";
import { scriptOwnerOf } from "../script-owner";
import { OFFICIAL_FORMULAS, type OfficialFormula } from "./index";

type FormulaRow = typeof reactorFormulas.$inferSelect;

function columnsOf(formula: OfficialFormula) {
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

const seeded = new WeakMap<D1Database, Promise<void>>();

/**
 * Makes the official formulas in the database match the ones in this repository, once per isolate
 * and database, before the first formula is read. Ids are fixed, so concurrent isolates and later
 * releases converge on the same rows, and reactors keep pointing at them.
 */
export function ensureOfficialFormulas(env: Bindings): Promise<void> {
  let done = seeded.get(env.DB);
  if (!done) {
    done = seedOfficialFormulas(env).catch((error) => {
      seeded.delete(env.DB);
      throw error;
    });
    seeded.set(env.DB, done);
  }
  return done;
}

async function seedOfficialFormulas(env: Bindings): Promise<void> {
  const db = databaseOf(env);
  const stored = new Map(
    (await db.select().from(reactorFormulas).where(isNull(reactorFormulas.tenantId))).map((row) => [row.id, row]),
  );
  const changed = OFFICIAL_FORMULAS.filter((formula) => differs(stored.get(formula.id), formula));
  if (changed.length === 0) return;
  // Published first: if publishing fails, the rows stay as they were and the next isolate retries.
  for (const formula of changed) {
    if (stored.get(formula.id)?.code !== formula.code) await publishScript(env, scriptOwnerOf({ id: formula.id, tenantId: null }), formula.code);
  }
  const now = Date.now();
  const [first, ...rest] = changed.map((formula) =>
    db
      .insert(reactorFormulas)
      .values({ id: formula.id, tenantId: null, type: "official", ...columnsOf(formula), createdBy: null, createdAt: now })
      .onConflictDoUpdate({
        target: reactorFormulas.id,
        set: { ...columnsOf(formula), modifiedAt: now },
        setWhere: isNull(reactorFormulas.tenantId),
      }),
  );
  await db.batch([first!, ...rest]);
}
