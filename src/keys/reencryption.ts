import { processingKeyContext } from "../apple-pay/service";
import { authenticationContext as applePayAuthenticationContext, cardContext as applePayCardContext } from "../apple-pay/tokens";
import { privateKeyContext } from "../client-keys/service";
import type { TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { dataKeyContext as documentDataKeyContext } from "../documents/service";
import { merchantKeyContext, resourceAuthenticationContext, resourceCardContext } from "../google-pay/service";
import { detokenizedContext, outcomeContext, sealingContext } from "../idempotency/service";
import { configurationContext as proxyConfigurationContext, keyContext as proxyKeyContext } from "../proxies/service";
import { configurationContext as reactorConfigurationContext } from "../reactors/configuration";
import { reactionArgsContext, reactionDetokenizedContext, reactionResultContext } from "../reactors/reactions";
import { sealingContext as tokenIntentContext } from "../token-intents/presentation";
import { resealToken } from "../tokens/sealing";
import * as tokenStorage from "../tokens/storage";
import { replaceTokens, type SealedToken } from "../tokens/storage-writes";
import { secretContext } from "../webhooks/service";

/*
 * A rotation's work (rotation.ts drives it): re-encrypting in bounded batches what is still sealed
 * under the old data-key version, the sealed columns by ciphertext prefix and the tokens by
 * key_version, each write conditional on the ciphertext it read.
 */

/** Tokens re-sealed per D1 batch (each is a handful of statements). */
const TOKENS_PER_WRITE = 5;

/**
 * The longest rest after one piece of work: a piece slowed to seconds (a database under heavy load)
 * must not make a step outlive its lease (rotation.ts), so past this the job works more than its
 * share rather than stall.
 */
const MAX_REST_MS = 1_000;

/** A column that holds ciphertexts (`v{version}.…`) under the tenant's data key, besides the tokens'. */
interface SealedColumn {
  database: "control" | "data";
  table: string;
  column: string;
  /** The columns besides tenant_id that name one row. */
  key: string[];
  /** The additional data the column's ciphertexts were sealed with. */
  context: (row: Record<string, string>) => string;
}

const SEALED_COLUMNS: SealedColumn[] = [
  { database: "control", table: "proxies", column: "key_ciphertext", key: ["id"], context: (row) => proxyKeyContext(row.id!) },
  { database: "control", table: "proxies", column: "configuration", key: ["id"], context: (row) => proxyConfigurationContext(row.id!) },
  { database: "control", table: "reactors", column: "configuration", key: ["id"], context: (row) => reactorConfigurationContext(row.id!) },
  { database: "control", table: "webhooks", column: "secret_ciphertext", key: ["id"], context: (row) => secretContext(row.id!) },
  {
    database: "control",
    table: "idempotency_marks",
    column: "outcome",
    key: ["application_id", "key"],
    context: (row) => outcomeContext(row.key!),
  },
  {
    database: "control",
    table: "client_encryption_keys",
    column: "private_key_ciphertext",
    key: ["id"],
    context: (row) => privateKeyContext(row.id!),
  },
  // A document's data key, not its bytes: they stay sealed under the same key, re-wrapped here.
  {
    database: "control",
    table: "documents",
    column: "data_key_ciphertext",
    key: ["id"],
    context: (row) => documentDataKeyContext(row.id!),
  },
  {
    database: "control",
    table: "google_pay_merchant_keys",
    column: "private_key_ciphertext",
    key: ["id"],
    context: (row) => merchantKeyContext(row.id!),
  },
  {
    database: "control",
    table: "google_pay_resources",
    column: "ciphertext",
    key: ["id"],
    context: (row) => resourceCardContext(row.id!),
  },
  {
    database: "control",
    table: "google_pay_resources",
    column: "authentication_ciphertext",
    key: ["id"],
    context: (row) => resourceAuthenticationContext(row.id!),
  },
  {
    database: "control",
    table: "apple_pay_certificates",
    column: "private_key_ciphertext",
    key: ["id"],
    context: (row) => processingKeyContext(row.id!),
  },
  {
    database: "control",
    table: "apple_pay_tokens",
    column: "data_ciphertext",
    key: ["id"],
    context: (row) => applePayCardContext(row.id!),
  },
  {
    database: "control",
    table: "apple_pay_tokens",
    column: "authentication_ciphertext",
    key: ["id"],
    context: (row) => applePayAuthenticationContext(row.id!),
  },
  {
    database: "data",
    table: "idempotency_records",
    column: "response",
    key: ["application_id", "key"],
    context: (row) => sealingContext(row.key!),
  },
  {
    database: "data",
    table: "idempotency_records",
    column: "detokenized",
    key: ["application_id", "key"],
    context: (row) => detokenizedContext(row.key!),
  },
  { database: "data", table: "token_intents", column: "ciphertext", key: ["id"], context: (row) => tokenIntentContext(row.id!) },
  {
    database: "data",
    table: "idempotency_records",
    column: "outcome",
    key: ["application_id", "key"],
    context: (row) => outcomeContext(row.key!),
  },
  { database: "data", table: "reactor_requests", column: "args", key: ["id"], context: (row) => reactionArgsContext(row.id!) },
  { database: "data", table: "reactor_requests", column: "result", key: ["id"], context: (row) => reactionResultContext(row.id!) },
  {
    database: "data",
    table: "reactor_requests",
    column: "detokenized",
    key: ["id"],
    context: (row) => reactionDetokenizedContext(row.id!),
  },
];

/** Records of the tenant still sealed under a version older than `version`. */
export async function countSealedBefore(tenant: TenantContext, version: number): Promise<number> {
  return paceOf(tenant)(async () => {
    let total = await tokenStorage.countTokensSealedBefore(tenant.db, tenant.tenantId, version);
    for (const column of SEALED_COLUMNS) {
      const row = await databaseOf(tenant, column)
        .prepare(`SELECT count(*) AS n FROM ${column.table} WHERE tenant_id = ? AND ${olderThan(column)}`)
        .bind(tenant.tenantId, prefixOf(version))
        .first<{ n: number }>();
      total += row?.n ?? 0;
    }
    return total;
  });
}

/**
 * One step: up to a batch of each sealed column's older records (those `finished` skipped), then of
 * tokens, re-encrypted under the keys' current version. Answers how many were found under an older
 * version, how many were rewritten (the others changed meanwhile), and whether the step `stopped`
 * at `deadline` before it had looked at everything (past it, no column and no token write is begun,
 * once the step has done one piece: a late start still makes progress). A stopped step's `found`
 * says nothing of what is left.
 */
export async function reencryptBatch(
  tenant: TenantContext,
  keys: TenantKeys,
  version: number,
  finished: Set<string>,
  deadline: number,
): Promise<{ found: number; reencrypted: number; stopped: boolean }> {
  const limit = tenant.config.ROTATION_BATCH_SIZE;
  const pace = paceOf(tenant);
  let found = 0;
  let reencrypted = 0;
  let worked = false;
  const due = () => worked && Date.now() >= deadline;
  const stopped = () => ({ found, reencrypted, stopped: true });
  for (const column of SEALED_COLUMNS) {
    const name = `${column.table}.${column.column}`;
    if (finished.has(name)) continue;
    if (due()) return stopped();
    worked = true;
    const done = await pace(() => reencryptColumn(tenant, keys, column, limit));
    if (done.found === 0) finished.add(name);
    found += done.found;
    reencrypted += done.reencrypted;
  }
  if (due()) return stopped();
  const rows = await pace(() => tokenStorage.tokensSealedBefore(tenant.db, tenant.tenantId, version, limit));
  found += rows.length;
  worked = true;
  for (let i = 0; i < rows.length; i += TOKENS_PER_WRITE) {
    if (i > 0 && due()) return stopped();
    const chunk = rows.slice(i, i + TOKENS_PER_WRITE);
    // One token at a time: re-sealing is CPU-bound (decrypt, render the expressions, seal), and an
    // isolate runs one thing at a time, so each rest lets the requests waiting on it run.
    const resealed: { token: SealedToken; readCiphertext: string }[] = [];
    for (const row of chunk) resealed.push({ token: await pace(() => resealToken(keys, row)), readCiphertext: row.ciphertext });
    // A re-sealed token keeps its modified_at; moves and rotations exclude each other, so only the fence matters here.
    reencrypted += await pace(() => replaceTokens(tenant.db.$client, tenant.writeFence(Date.now()), resealed));
  }
  return { found, reencrypted, stopped: false };
}

async function reencryptColumn(
  tenant: TenantContext,
  keys: TenantKeys,
  column: SealedColumn,
  limit: number,
): Promise<{ found: number; reencrypted: number }> {
  const d1 = databaseOf(tenant, column);
  const { results } = await d1
    .prepare(
      `SELECT ${column.key.join(", ")}, ${column.column} AS sealed FROM ${column.table} WHERE tenant_id = ? AND ${olderThan(column)} LIMIT ?`,
    )
    .bind(tenant.tenantId, prefixOf(keys.current.version), limit)
    .all<Record<string, string>>();
  if (results.length === 0) return { found: 0, reencrypted: 0 };
  const statements = await Promise.all(
    results.map(async (row) => {
      const context = column.context(row);
      const sealed = await keys.encrypt(await keys.decrypt(row.sealed!, context), context);
      return d1
        .prepare(
          `UPDATE ${column.table} SET ${column.column} = ? WHERE tenant_id = ? AND ${column.key.map((key) => `${key} = ?`).join(" AND ")} AND ${column.column} = ?`,
        )
        .bind(sealed, tenant.tenantId, ...column.key.map((key) => row[key]), row.sealed);
    }),
  );
  const updated = await d1.batch(statements);
  return { found: results.length, reencrypted: updated.reduce((sum, result) => sum + result.meta.changes, 0) };
}

/**
 * How a rotation yields to traffic: each piece of its work (a read or a write of the tenant's
 * records, or the re-sealing of one token) is followed by a rest (at most MAX_REST_MS), so that the
 * work fills at most ROTATION_DUTY_CYCLE of the time. Requests then find the database free most of the time, and when
 * they do not, wait for one small piece only. The rest is in proportion to the piece's duration, so
 * a busy database, whose statements take longer, gets longer rests. A Worker's clock moves only
 * across I/O, so a piece of pure CPU (re-sealing: decrypt, render the expressions, seal) measures
 * nothing and rests one turn of the event loop: enough for the requests waiting on this isolate,
 * which runs one thing at a time, to go first.
 */
export function paceOf(tenant: TenantContext): <T>(work: () => Promise<T>) => Promise<T> {
  const restPerWork = 1 / tenant.config.ROTATION_DUTY_CYCLE - 1;
  return async (work) => {
    const started = Date.now();
    const result = await work();
    await new Promise((resolve) => setTimeout(resolve, Math.min(MAX_REST_MS, (Date.now() - started) * restPerWork)));
    return result;
  };
}

function databaseOf(tenant: TenantContext, column: SealedColumn): D1Database {
  return column.database === "control" ? tenant.control.$client : tenant.db.$client;
}

/** The column holds a ciphertext sealed under another version than the pattern bound for it (prefixOf). */
function olderThan(column: SealedColumn): string {
  return `${column.column} IS NOT NULL AND ${column.column} NOT LIKE ?`;
}

/** The LIKE pattern of ciphertexts sealed under `version` (`v{version}.…`). */
function prefixOf(version: number): string {
  return `v${version}.%`;
}
