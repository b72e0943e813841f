import type { Database } from "../db/client";
import type { Report } from "./definition";
import type { WorkBudget } from "./expressions";
import { isAliasExpression, normalTokenId, renderAliasId } from "./id-format";
import type { CreateToken } from "./schema";
import * as storage from "./storage";

/** A request's id before it is checked against the tenant's tokens. */
export interface WantedId {
  id: string;
  /** Chosen by the client (literally or by an alias), so it may be taken; a random UUID never is. */
  chosen: boolean;
  /** The alias expression that rendered the id: drawn again when the id is taken. */
  alias?: string;
}

export interface ClaimedId {
  id: string;
  /** A literal id that a live token, or an earlier request of the same call, already holds. */
  taken: boolean;
}

/** How often a taken alias is drawn again before a random UUID stands in. */
const ALIAS_DRAWS = 5;

export function wantedIdOf(input: CreateToken, data: unknown, report: Report, work: WorkBudget): WantedId {
  if (input.id === undefined || input.id === null) return { id: crypto.randomUUID(), chosen: false };
  if (!isAliasExpression(input.id)) return { id: normalTokenId(input.id), chosen: true };
  const rendered = renderAliasId(input.id, data, work);
  if ("problem" in rendered) report(["id"], rendered.problem);
  return { id: "id" in rendered ? rendered.id : "", chosen: true, alias: input.id };
}

/**
 * Checks the chosen ids against the tenant's live tokens and each other, in request order. A taken
 * alias is drawn again (alias filters are random) up to ALIAS_DRAWS times, then a random UUID
 * stands in, as the original interface does when no unique alias can be generated. A taken literal
 * id is marked: it is refused (409) unless deduplication answers the request with an existing token.
 */
export async function claimTokenIds(
  db: Database,
  tenantId: string,
  wanted: WantedId[],
  dataOf: (i: number) => unknown,
  now: number,
): Promise<ClaimedId[]> {
  const held = await storage.liveTokenIds(
    db.$client,
    tenantId,
    wanted.filter((w) => w.chosen).map((w) => w.id),
    now,
  );
  const claimed = new Set<string>();
  const ids: ClaimedId[] = [];
  let redraw: number[] = [];
  wanted.forEach((w, i) => {
    const taken = w.chosen && (held.has(w.id) || claimed.has(w.id));
    if (taken && w.alias !== undefined) {
      redraw.push(i);
    } else {
      claimed.add(w.id);
      ids[i] = { id: w.id, taken };
    }
  });
  for (let draw = 0; draw < ALIAS_DRAWS && redraw.length > 0; draw++) {
    const drawn = redraw.map((i) => ({ i, rendered: renderAliasId(wanted[i]!.alias!, dataOf(i)) }));
    const candidates = drawn.flatMap(({ rendered }) => ("id" in rendered ? [rendered.id] : []));
    const heldNow = await storage.liveTokenIds(db.$client, tenantId, candidates, now);
    redraw = [];
    for (const { i, rendered } of drawn) {
      if ("id" in rendered && !heldNow.has(rendered.id) && !claimed.has(rendered.id)) {
        claimed.add(rendered.id);
        ids[i] = { id: rendered.id, taken: false };
      } else {
        redraw.push(i);
      }
    }
  }
  for (const i of redraw) ids[i] = { id: crypto.randomUUID(), taken: false };
  return ids;
}
