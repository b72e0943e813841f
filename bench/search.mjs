// Token search at 100,000 and 1,000,000 tokens of one tenant. The tokens are bulk-loaded straight
// into D1 with real ciphertexts and blind indexes (the tenant's own data keys, unwrapped from
// tenant_keys with the master key; the same AES-GCM and HMAC as src/crypto/tenant-keys.ts). For each query kind, at each size:
//   - over HTTP and inside the worker (Server-Timing), next to the same lookup written by hand in
//     SQL (page and count in one D1 batch, run from this process through bench.db);
//   - the SQL the compiler writes next to that hand-written SQL, both through bench.db, so the
//     ratio isolates the quality of the compiled SQL from transport and presentation.
// Every selective query matches the same tokens at both sizes. Last, the parse rate of the
// generated parser next to the `lucene` package on one corpus.
//   npm run bench search [--sizes=100000,1000000] [--iterations=200] [--chunk=2000]
import { createCipheriv, createDecipheriv, createHmac, randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import lucene from "lucene";
import { parse as parseGenerated } from "../src/search/parser.generated.js";
import { median, percentiles } from "./lib/statistics.mjs";

const BASE_TIME = Date.UTC(2024, 0, 1);
const SSN_INDEXES = ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"];
const PAGE = 20;
const MIN_SIZE = 20_000;
const REPEAT = 50;

export default async function search(bench) {
  const sizes = String(bench.args.sizes ?? "100000,1000000")
    .split(",")
    .map(Number);
  if (sizes.some((size) => !(size >= MIN_SIZE)))
    throw new Error(`every size must be at least ${MIN_SIZE}: the queries target its first tokens`);
  const iterations = Number(bench.args.iterations ?? 200);
  const chunk = Number(bench.args.chunk ?? 2000);

  const compiler = await loadCompiler();
  const tenant = await bench.seedTenant();
  const app = await bench.createApplication(tenant, { type: "private", permissions: ["token:search"] });
  const seed = await Seeder.forTenant(bench, tenant.tenantId, app.id, chunk);
  const floor = await bench.latency(() => bench.db.prepare("SELECT 1").all(), { iterations, warmup: 20 });
  console.log(
    `  bench.db round trip of SELECT 1: p50 ${floor.p50.toFixed(3)} ms, p95 ${floor.p95.toFixed(3)} ms ` +
      `(in every hand-written SQL figure; ${(floor.p50 / REPEAT).toFixed(3)} ms of each "one run" figure)`,
  );

  const figures = new Map();
  for (const size of sizes) {
    const started = performance.now();
    await seed.upTo(size);
    console.log(`  seeded ${size.toLocaleString("en")} tokens (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    const kinds = queryKinds(seed, tenant.tenantId);
    for (const kind of kinds) {
      const compiled = compiledStatements(compiler, seed, tenant.tenantId, kind.query);
      const measured = await measure(bench, app.key, kind, compiled, iterations);
      figures.set(`${kind.name}@${size}`, measured);
      const at = `${kind.name} @${compact(size)}`;
      bench.report(`${at} HTTP p50`, measured.http.p50, "hand-written SQL p50", measured.hand.p50, "ms");
      bench.report(`${at} HTTP p95`, measured.http.p95, "hand-written SQL p95", measured.hand.p95, "ms");
      bench.report(`${at} in-worker p50`, measured.worker.p50, "HTTP p50", measured.http.p50, "ms");
      bench.report(`${at} in-worker p95`, measured.worker.p95, "HTTP p95", measured.http.p95, "ms");
      bench.report(`${at} compiled SQL, one run`, measured.compiledPerRun, "hand-written SQL, one run", measured.handPerRun, "ms");
      bench.report(
        `${at} compiled SQL rows read`,
        measured.rowsRead.compiled,
        "hand-written SQL rows read",
        measured.rowsRead.hand,
        "rows",
      );
    }
  }

  if (sizes.length > 1) {
    const [small, large] = [Math.min(...sizes), Math.max(...sizes)];
    console.log(`\n  scaling: p50 over HTTP at ${compact(large)} next to ${compact(small)}`);
    for (const kind of queryKinds(seed, tenant.tenantId)) {
      const a = figures.get(`${kind.name}@${small}`);
      const b = figures.get(`${kind.name}@${large}`);
      bench.report(`${kind.name} HTTP p50 @${compact(large)}`, b.http.p50, `@${compact(small)}`, a.http.p50, "ms");
    }
  }

  console.log("\n  parse rate, same corpus");
  const [generated, reference] = parseRates(parseCorpus(), [
    (query) => parseGenerated(query, { maxDepth: 20 }),
    (query) => lucene.parse(query),
  ]);
  bench.report("generated parser (grammar/search.peggy)", generated, "lucene npm package", reference, "queries/s");
}

/** Bulk loader: appends tokens 0, 1, 2, … of one tenant, one second apart, with their side rows. */
class Seeder {
  constructor(bench, tenantId, applicationId, chunk, material) {
    this.bench = bench;
    this.tenantId = tenantId;
    this.applicationId = applicationId;
    this.chunk = chunk;
    this.ids = [];
    // A version's material is its encryption, search-index, fingerprint and audit keys end to end.
    this.encryptionKey = material.subarray(0, 32);
    this.searchIndexKey = material.subarray(32, 64);
  }

  /**
   * A seeder with the tenant's data keys of version 1: Keyring.unwrap, with the single master key as
   * keyring version 1 (`k1.{iv}.{AES-256-GCM}`, the tenant and version authenticated).
   */
  static async forTenant(bench, tenantId, applicationId, chunk) {
    const row = await bench.db.prepare("SELECT wrapped FROM tenant_keys WHERE tenant_id = ? AND version = 1").bind(tenantId).first();
    const [kek, iv, sealed] = row.wrapped.split(".");
    if (kek !== "k1") throw new Error(`expected data keys wrapped by keyring version 1, found ${kek}`);
    const bytes = Buffer.from(sealed, "base64url");
    const decipher = createDecipheriv("aes-256-gcm", Buffer.from(bench.masterKey, "base64"), Buffer.from(iv, "base64url"));
    decipher.setAAD(Buffer.from(`tenant-keys/${tenantId}/v1`));
    decipher.setAuthTag(bytes.subarray(-16));
    const material = Buffer.concat([decipher.update(bytes.subarray(0, -16)), decipher.final()]);
    return new Seeder(bench, tenantId, applicationId, chunk, material);
  }

  async upTo(size) {
    const db = this.bench.db;
    while (this.ids.length < size) {
      const from = this.ids.length;
      const to = Math.min(size, from + this.chunk);
      const rows = { tokens: [], token_containers: [], token_metadata: [], token_search_index: [] };
      for (let i = from; i < to; i++) this.token(i, rows);
      await db.batch(Object.entries(rows).map(([table, list]) => insertFromJson(db, table, list)));
    }
  }

  token(i, rows) {
    const id = randomUUID();
    this.ids.push(id);
    const ssn = i % 2 === 0;
    const data = ssn ? ssnOf(i) : `value-${i}`;
    const at = timeOf(i);
    const container = containerOf(i);
    rows.tokens.push({
      id,
      tenant_id: this.tenantId,
      type: ssn ? "social_security_number" : "token",
      ciphertext: this.encrypt(JSON.stringify(data), id),
      fingerprint: randomBytes(32).toString("base64url"),
      fingerprint_expression: ssn ? "{{ data | remove: '-' }}" : "{{ data | stringify }}",
      mask: ssn ? JSON.stringify("{{ data | reveal_last: 4 }}") : null, // masks are stored as JSON text
      search_indexes: JSON.stringify(ssn ? SSN_INDEXES : ["{{ data }}"]),
      metadata: JSON.stringify({ customer: customerOf(i) }),
      containers: JSON.stringify([container]),
      expires_at: null,
      created_by: this.applicationId,
      created_at: at,
      modified_by: this.applicationId,
      modified_at: at,
    });
    rows.token_containers.push({ tenant_id: this.tenantId, container, token_id: id });
    rows.token_metadata.push({ tenant_id: this.tenantId, key: "customer", value: customerOf(i), token_id: id });
    const indexes = ssn ? [data, data.replace(/-/g, ""), data.slice(-4)] : [data];
    for (const value of indexes) {
      rows.token_search_index.push({ tenant_id: this.tenantId, blind_index: this.blindIndex(value), token_id: id });
    }
  }

  /** TenantKeys.encrypt: AES-256-GCM, random 96-bit IV, `${tenantId}/${id}` as additional data. */
  encrypt(plaintext, id) {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.encryptionKey, iv);
    cipher.setAAD(Buffer.from(`${this.tenantId}/${id}`));
    const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `v1.${iv.toString("base64url")}.${sealed.toString("base64url")}`;
  }

  blindIndex(value) {
    return createHmac("sha256", this.searchIndexKey).update(value.toLowerCase()).digest("base64url");
  }
}

function insertFromJson(db, table, rows) {
  const columns = Object.keys(rows[0]);
  return db
    .prepare(`INSERT INTO ${table} (${columns.join(", ")}) SELECT ${columns.map((c) => `value ->> '${c}'`).join(", ")} FROM json_each(?)`)
    .bind(JSON.stringify(rows));
}

const ssnOf = (i) => {
  const digits = String(100_000_000 + i);
  return `${digits.slice(0, 3)}-${digits.slice(3, 5)}-${digits.slice(5)}`;
};
const timeOf = (i) => BASE_TIME + i * 1000;
/** Five tokens per customer, a hundred per container, a thousand per region: the same at every size. */
const customerOf = (i) => `c${Math.floor(i / 5)}`;
const containerOf = (i) => `/r${Math.floor(i / 1000)}/c${Math.floor(i / 100)}/`;

const LIVE = "(t.expires_at IS NULL OR t.expires_at > ?)";
const ORDER = `ORDER BY t.created_at DESC, t.id DESC LIMIT ${PAGE}`;
/** The vault counts up to 10,000 matches past the page (COUNT_HORIZON); so does the baseline. */
const bounded = (select) => `SELECT count(*) AS n FROM (${select} LIMIT 10000)`;

/**
 * The query kinds, each with the number of tokens it matches and the lookup a developer would write
 * by hand: driving from the side table with CROSS JOIN, which fixes SQLite's join order.
 */
function queryKinds(seed, tenantId) {
  const now = Date.now();
  const iso = (i) => new Date(timeOf(i)).toISOString();
  const sideLookup = (table, where, params) => {
    const from = `FROM ${table} AS s CROSS JOIN tokens AS t ON t.id = s.token_id WHERE s.tenant_id = ? AND ${where} AND t.tenant_id = ? AND ${LIVE}`;
    const all = [tenantId, ...params, tenantId, now];
    return { page: [`SELECT t.* ${from} ${ORDER}`, all], count: [bounded(`SELECT 1 ${from}`), all] };
  };
  const tokensWhere = (where, params) => {
    const from = `FROM tokens AS t WHERE t.tenant_id = ? AND ${where} AND ${LIVE}`;
    const all = [tenantId, ...params, now];
    return { page: [`SELECT t.* ${from} ${ORDER}`, all], count: [bounded(`SELECT 1 ${from}`), all] };
  };
  const [first, second, excluded] = [customerOf(18_000), customerOf(18_005), containerOf(19_999)];
  return [
    { name: "id", query: `id:${seed.ids[14_321]}`, matches: 1, hand: tokensWhere("t.id = ?", [seed.ids[14_321]]) },
    {
      name: "metadata",
      query: `metadata.customer:${customerOf(12_345)}`,
      matches: 5,
      hand: sideLookup("token_metadata", "s.key = ? AND s.value = ?", ["customer", customerOf(12_345)]),
    },
    {
      name: "data",
      query: `data:${ssnOf(4_242)}`,
      matches: 1,
      hand: sideLookup("token_search_index", "s.blind_index = ? AND t.type IN ('social_security_number', 'employer_id_number', 'token')", [
        seed.blindIndex(ssnOf(4_242)),
      ]),
    },
    {
      name: "container exact",
      query: `container:${containerOf(12_345)}`,
      matches: 100,
      hand: sideLookup("token_containers", "s.container = ?", [containerOf(12_345)]),
    },
    {
      name: "container wildcard",
      query: "container:/r15/*",
      matches: 1000,
      hand: sideLookup("token_containers", "s.container >= ? AND s.container < ?", ["/r15/", "/r150"]),
    },
    {
      name: "date range",
      query: `created_at:[${iso(10_000)} TO ${iso(10_099)}]`,
      matches: 100,
      hand: tokensWhere("t.created_at >= ? AND t.created_at <= ?", [timeOf(10_000), timeOf(10_099)]),
    },
    {
      name: "boolean, three levels",
      query: `(metadata.customer:${first} OR (metadata.customer:${second} AND type:social_security_number)) AND NOT container:${excluded}`,
      matches: 7,
      hand: sideLookup(
        "token_metadata",
        "s.key = 'customer' AND s.value IN (?, ?) AND (s.value = ? OR t.type = 'social_security_number') " +
          "AND NOT EXISTS (SELECT 1 FROM token_containers AS c WHERE c.tenant_id = s.tenant_id AND c.container = ? AND c.token_id = t.id)",
        [first, second, first, excluded],
      ),
    },
    { name: "every token (not selective)", query: null, matches: null, hand: tokensWhere("TRUE", []) },
  ];
}

async function measure(bench, key, kind, compiled, iterations) {
  const check = await bench.request("POST", "/tokens/search", { key, body: { query: kind.query, size: PAGE } });
  if (check.status !== 200) throw new Error(`${kind.name}: ${check.status} ${JSON.stringify(check.body)}`);
  if (kind.matches !== null && check.body.pagination.total_items !== kind.matches) {
    throw new Error(`${kind.name}: ${check.body.pagination.total_items} matches, expected ${kind.matches}`);
  }
  // Prepared once: every bench.db.prepare is a synchronous round trip to workerd.
  const hand = prepareAll(bench.db, kind.hand);
  const ours = prepareAll(bench.db, compiled);
  const rowsRead = {};
  for (const [label, statements] of [
    ["hand", hand],
    ["compiled", ours],
  ]) {
    const [page, count] = await bench.db.batch(statements);
    const sameTotal = kind.matches === null || Object.values(count.results[0])[0] === kind.matches;
    if (page.results[0]?.id !== check.body.data[0]?.id || page.results.length !== check.body.data.length || !sameTotal) {
      throw new Error(`${kind.name}: the ${label} SQL finds another page or count than the search`);
    }
    rowsRead[label] = page.meta.rows_read + count.meta.rows_read;
  }

  const body = JSON.stringify({ query: kind.query, size: PAGE });
  const inWorker = [];
  const overHttp = async () => {
    const response = await fetch(bench.url("/tokens/search"), {
      method: "POST",
      headers: { "SVC-API-KEY": key, "content-type": "application/json" },
      body,
    });
    await response.arrayBuffer();
    inWorker.push(Number(/search;dur=([\d.]+)/.exec(response.headers.get("server-timing"))[1]));
  };
  // Measured turn about in rounds, so that a change of load on this machine weighs on each figure
  // and its baseline alike; each figure is the median of its rounds.
  const rounds = 5;
  const perRound = Math.max(10, Math.ceil(iterations / rounds));
  const samples = { http: [], hand: [], handPerRun: [], compiledPerRun: [] };
  for (let round = 0; round < rounds; round++) {
    const warmup = round === 0 ? 20 : 3;
    samples.http.push(await bench.latency(overHttp, { iterations: perRound, warmup }));
    samples.hand.push(await bench.latency(() => bench.db.batch(hand), { iterations: perRound, warmup }));
    samples.compiledPerRun.push(await perRun(bench, ours, perRound));
    samples.handPerRun.push(await perRun(bench, hand, perRound));
  }
  const medianOf = (list, key) => median(list.map((figures) => figures[key]));
  return {
    http: { p50: medianOf(samples.http, "p50"), p95: medianOf(samples.http, "p95") },
    worker: percentiles(inWorker.slice(-rounds * perRound)),
    hand: { p50: medianOf(samples.hand, "p50"), p95: medianOf(samples.hand, "p95") },
    handPerRun: median(samples.handPerRun),
    compiledPerRun: median(samples.compiledPerRun),
    rowsRead,
  };
}

/** The page and count statements, bound, ready to batch. */
function prepareAll(db, { page: [pageSql, pageParams], count: [countSql, countParams] }) {
  return [db.prepare(pageSql).bind(...pageParams), db.prepare(countSql).bind(...countParams)];
}

/** p50 of one run of the statements, from batches of REPEAT runs: bench.db's round trip is shared out. */
async function perRun(bench, statements, iterations) {
  const batch = Array.from({ length: REPEAT }, () => statements).flat();
  const { p50 } = await bench.latency(() => bench.db.batch(batch), { iterations: Math.max(5, Math.round(iterations / 10)), warmup: 2 });
  return p50 / REPEAT;
}

/** The statements the vault runs for the query, from the compiler itself. */
function compiledStatements({ compileSearch, parseQuery }, seed, tenantId, query) {
  const parsed = query ? parseQuery(query) : null;
  const data = query?.match(/data:(\S+)/)?.[1];
  const blindIndexes = new Map(data ? [[data, seed.blindIndex(data)]] : []);
  const { page, count } = compileSearch(
    parsed,
    { tenantId, now: Date.now(), containers: null, blindIndexes },
    { limit: PAGE, offset: 0, countLimit: 10_000 },
  );
  return { page: [page.sql, page.params], count: [count.sql, count.params] };
}

/** src/search's parser and compiler, bundled for Node with the esbuild the toolchain already carries. */
async function loadCompiler() {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const result = await build({
    stdin: {
      contents: 'export { compileSearch } from "./src/search/compile"; export { parseQuery } from "./src/search/parse";',
      resolveDir: root,
      loader: "ts",
    },
    bundle: true,
    format: "esm",
    platform: "node",
    // Packages stay imports, resolved from node_modules: bundling liquidjs's CommonJS build into ESM
    // breaks on its dynamic require of "stream".
    packages: "external",
    write: false,
    logLevel: "error",
  });
  const file = join(root, ".bench", "search-compiler.mjs");
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, result.outputFiles[0].text);
  return import(pathToFileURL(file).href);
}

/** Queries both grammars read (container paths quoted, since bare /…/ is a Lucene regex). */
function parseCorpus() {
  return [
    "id:1b4e28ba-2fa1-11d2-883f-0016d3cca427",
    "type:social_security_number",
    "metadata.customer:c12345",
    'data:"123-45-6789"',
    'container:"/r12/c123/"',
    'container:"/r45/*"',
    "created_at:[2024-01-01 TO 2024-02-01]",
    "modified_at:{2024-01-01T00:00:00Z TO *]",
    "metadata.customer:c1 AND type:token",
    "metadata.customer:c1 OR metadata.customer:c2 OR metadata.customer:c3",
    '(metadata.customer:c20000 OR (metadata.customer:c20005 AND type:social_security_number)) AND NOT container:"/r99/c999/"',
    'type:token AND NOT (container:"/a/b/" OR metadata.status:closed) AND created_at:[2024-01-01 TO *]',
  ];
}

/** Queries per second of each parser, in alternating rounds so that a change of load hits both alike. */
function parseRates(corpus, parsers) {
  for (let i = 0; i < 3000; i++) for (const parse of parsers) parse(corpus[i % corpus.length]);
  const elapsed = parsers.map(() => 0);
  const parsed = parsers.map(() => 0);
  for (let round = 0; round < 20; round++) {
    parsers.forEach((parse, p) => {
      const started = performance.now();
      while (performance.now() - started < 100) {
        for (const query of corpus) parse(query);
        parsed[p] += corpus.length;
      }
      elapsed[p] += performance.now() - started;
    });
  }
  return parsed.map((count, p) => count / (elapsed[p] / 1000));
}

function compact(size) {
  return size >= 1_000_000 ? `${size / 1_000_000}M` : `${size / 1000}k`;
}
