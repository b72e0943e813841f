// Token create throughput: single POST /tokens and POST /tokenize batches (of 100), each next to two
// D1 batches that insert the same rows (token, container, metadata, three search indexes per social
// security number) from this process, with the same concurrency, in the same run:
//   - "plain": one INSERT per row, as a straightforward implementation writes them;
//   - "floor": one INSERT … SELECT FROM json_each(?) per table, as the vault writes them, i.e. the
//     database work alone, without HTTP, authentication, validation, Liquid or crypto.
//   npm run bench tokens [--duration=3000] [--concurrency=16] [--batch=100]
import { randomBytes, randomUUID } from "node:crypto";

export default async function tokens(bench) {
  const { duration: durationMs, concurrency, batch } = bench.sizes({ duration: [3000, 50], concurrency: [16, 2], batch: [100, 10] });
  const tenant = await bench.seedTenant();
  const app = await bench.createApplication(tenant, { type: "private", permissions: ["token:create"] });

  let serial = 100_000_000;
  const nextSsn = () => {
    const digits = String(serial++);
    return `${digits.slice(0, 3)}-${digits.slice(3, 5)}-${digits.slice(5)}`;
  };
  const ssnRequest = () => ({ type: "social_security_number", data: nextSsn(), metadata: { source: "bench" } });

  const check = await bench.request("POST", "/tokens", { key: app.key, body: ssnRequest() });
  if (check.status !== 201) throw new Error(`create failed: ${check.status} ${JSON.stringify(check.body)}`);
  const checkBatch = await bench.request("POST", "/tokenize", { key: app.key, body: Array.from({ length: batch }, ssnRequest) });
  if (checkBatch.status !== 201) throw new Error(`tokenize failed: ${checkBatch.status} ${JSON.stringify(checkBatch.body)}`);

  const single = await bench.throughput(
    async () => {
      const reply = await bench.request("POST", "/tokens", { key: app.key, body: ssnRequest() });
      if (reply.status !== 201) throw new Error(`create failed: ${reply.status}`);
    },
    { concurrency, durationMs },
  );
  const singlePlain = await bench.throughput(() => bench.db.batch(rowByRow(bench.db, rowsFor(tenant, app.id, 1))), {
    concurrency,
    durationMs,
  });
  const singleFloor = await bench.throughput(() => bench.db.batch(tableByTable(bench.db, rowsFor(tenant, app.id, 1))), {
    concurrency,
    durationMs,
  });
  bench.report("POST /tokens (single creates)", single.rps, "plain D1 batch, same rows", singlePlain.rps, "tokens/s");
  bench.report("POST /tokens (single creates)", single.rps, "floor D1 batch, same rows", singleFloor.rps, "tokens/s");

  const batched = await bench.throughput(
    async () => {
      const reply = await bench.request("POST", "/tokenize", { key: app.key, body: Array.from({ length: batch }, ssnRequest) });
      if (reply.status !== 201) throw new Error(`tokenize failed: ${reply.status}`);
    },
    { concurrency, durationMs },
  );
  const batchedPlain = await bench.throughput(() => bench.db.batch(rowByRow(bench.db, rowsFor(tenant, app.id, batch))), {
    concurrency,
    durationMs,
  });
  const batchedFloor = await bench.throughput(() => bench.db.batch(tableByTable(bench.db, rowsFor(tenant, app.id, batch))), {
    concurrency,
    durationMs,
  });
  const label = `POST /tokenize (batches of ${batch})`;
  bench.report(label, batched.rps * batch, "plain D1 batch, same rows", batchedPlain.rps * batch, "tokens/s");
  bench.report(label, batched.rps * batch, "floor D1 batch, same rows", batchedFloor.rps * batch, "tokens/s");
}

/**
 * The rows the vault writes for `count` social security numbers, keyed by table and column: the
 * token with a ciphertext and fingerprint of realistic size, its container, its metadata entry and
 * its three blind indexes.
 */
function rowsFor(tenant, applicationId, count) {
  const now = Date.now();
  const rows = { tokens: [], token_containers: [], token_metadata: [], token_search_index: [] };
  for (let i = 0; i < count; i++) {
    const id = randomUUID();
    rows.tokens.push({
      id,
      tenant_id: tenant.tenantId,
      type: "social_security_number",
      ciphertext: `v1.${opaque(12)}.${opaque(29)}`,
      fingerprint: opaque(32),
      fingerprint_expression: "{{ data | remove: '-' }}",
      mask: "{{ data | reveal_last: 4 }}",
      search_indexes: JSON.stringify(["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"]),
      metadata: JSON.stringify({ source: "bench" }),
      containers: JSON.stringify(["/pii/high/"]),
      expires_at: null,
      created_by: applicationId,
      created_at: now,
      modified_by: applicationId,
      modified_at: now,
    });
    rows.token_containers.push({ tenant_id: tenant.tenantId, container: "/pii/high/", token_id: id });
    rows.token_metadata.push({ tenant_id: tenant.tenantId, key: "source", value: "bench", token_id: id });
    for (let j = 0; j < 3; j++) rows.token_search_index.push({ tenant_id: tenant.tenantId, blind_index: opaque(32), token_id: id });
  }
  return rows;
}

/** One INSERT statement per row. */
function rowByRow(db, rows) {
  return Object.entries(rows).flatMap(([table, tableRows]) => {
    const columns = Object.keys(tableRows[0]);
    const insert = db.prepare(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`);
    return tableRows.map((row) => insert.bind(...columns.map((column) => row[column])));
  });
}

/** One INSERT per table, its rows passed as one JSON parameter. */
function tableByTable(db, rows) {
  return Object.entries(rows).map(([table, tableRows]) => {
    const columns = Object.keys(tableRows[0]);
    return db
      .prepare(`INSERT INTO ${table} (${columns.join(", ")}) SELECT ${columns.map((c) => `value ->> '${c}'`).join(", ")} FROM json_each(?)`)
      .bind(JSON.stringify(tableRows));
  });
}

function opaque(bytes) {
  return randomBytes(bytes).toString("base64url");
}
