// Token search at 100,000 and 1,000,000 tokens of one tenant. The tokens are bulk-loaded straight
// into D1 by the vault's own code (bench/lib/vault-code.mjs): each is defined, evaluated and sealed
// as a create seals it, under the tenant's data keys (unwrapped from tenant_keys by the keyring),
// and written by the vault's insert, a chunk at a time. For each query kind, at each size:
//   - over HTTP and inside the worker (Server-Timing), next to the same lookup written by hand in
//     SQL (page and count in one D1 batch, run from this process through bench.db);
//   - the SQL the compiler writes next to that hand-written SQL, both through bench.db, so the
//     ratio isolates the quality of the compiled SQL from transport and presentation.
// Every selective query matches tokens among the first `span` at every size, the same number at
// every span. Then deep paging: page 1,000 (or the deepest page a query has) next to page 1 of the
// same query, by cursor (POST /v2/tokens/search) and by number (POST /tokens/search), for a
// selective query, a date range and every token. Last, the parse rate of the generated parser next
// to the `lucene` package on one corpus, for `parsing` milliseconds each.
//   npm run bench search [--sizes=100000,1000000] [--span=20000] [--iterations=200] [--chunk=2000] [--parsing=2000]
//     [--repeat=50]
import { randomUUID } from "node:crypto";
import lucene from "lucene";
import { median, percentiles } from "./lib/statistics.mjs";
import { vaultCode } from "./lib/vault-code.mjs";

const BASE_TIME = Date.UTC(2024, 0, 1);
const SSN_INDEXES = ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"];
const PAGE = 20;
/** Five tokens per customer, a hundred per container, a thousand per region (see customerOf). */
const REGION = 1000;

export default async function search(bench) {
  const { sizes, span, iterations, chunk, parsing, repeat } = bench.sizes({
    sizes: [
      [100_000, 1_000_000],
      [2000, 3000],
    ],
    span: [20_000, 2000],
    iterations: [200, 1],
    chunk: [2000, 1000],
    parsing: [2000, 100],
    repeat: [50, 1],
  });
  if (!(span >= 2 * REGION && span % REGION === 0)) throw new Error(`the span must be a multiple of ${REGION}, at least ${2 * REGION}`);
  if (sizes.some((size) => !(size >= span)))
    throw new Error(`every size must be at least the span, ${span}: the queries target its tokens`);

  const vault = await vaultCode();
  const tenant = await bench.seedTenant();
  const app = await bench.createApplication(tenant, { type: "private", permissions: ["token:search"] });
  const seed = await Seeder.forTenant(bench, vault, tenant.tenantId, app.id, chunk);
  const floor = await bench.latency(() => bench.db.prepare("SELECT 1").all(), { iterations, warmup: 20 });
  console.log(
    `  bench.db round trip of SELECT 1: p50 ${floor.p50.toFixed(3)} ms, p95 ${floor.p95.toFixed(3)} ms ` +
      `(in every hand-written SQL figure; ${(floor.p50 / repeat).toFixed(3)} ms of each "one run" figure)`,
  );

  const figures = new Map();
  for (const size of sizes) {
    const started = performance.now();
    await seed.upTo(size);
    console.log(`  seeded ${size.toLocaleString("en")} tokens (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    const kinds = await queryKinds(seed, tenant.tenantId, span);
    for (const kind of kinds) {
      const compiled = await compiledStatements(vault, seed, tenant.tenantId, kind.query);
      const measured = await measure(bench, app.key, kind, compiled, { iterations, repeat });
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
    console.log(`\n  deep paging @${compact(size)}: page ${DEEP_PAGE} (or a query's last) next to page 1 of the same query`);
    for (const kind of deepPagingKinds(tenant.tenantId, span, size)) {
      const deep = await measureDeepPaging(bench, vault, app.key, kind, { iterations });
      const at = `${kind.name} @${compact(size)}`;
      const page = `page ${deep.page}`;
      bench.report(`${at} v2 ${page} HTTP p50`, deep.v2.deep.p50, "v2 page 1 HTTP p50", deep.v2.first.p50, "ms");
      bench.report(`${at} v2 ${page} in-worker p50`, deep.v2.deepWorker, "v2 page 1 in-worker p50", deep.v2.firstWorker, "ms");
      bench.report(`${at} v2 ${page} rows read`, deep.rowsRead.deep, "v2 page 1 rows read", deep.rowsRead.first, "rows");
      bench.report(`${at} v1 ${page} HTTP p50`, deep.v1.deep.p50, "v1 page 1 HTTP p50", deep.v1.first.p50, "ms");
      bench.report(`${at} v2 ${page} HTTP p50`, deep.v2.deep.p50, `v1 ${page} HTTP p50`, deep.v1.deep.p50, "ms");
    }
  }

  if (sizes.length > 1) {
    const [small, large] = [Math.min(...sizes), Math.max(...sizes)];
    console.log(`\n  scaling: p50 over HTTP at ${compact(large)} next to ${compact(small)}`);
    for (const kind of await queryKinds(seed, tenant.tenantId, span)) {
      const a = figures.get(`${kind.name}@${small}`);
      const b = figures.get(`${kind.name}@${large}`);
      bench.report(`${kind.name} HTTP p50 @${compact(large)}`, b.http.p50, `@${compact(small)}`, a.http.p50, "ms");
    }
  }

  console.log("\n  parse rate, same corpus");
  const [generated, reference] = parseRates(parseCorpus(), parsing, [
    (query) => vault.parseGenerated(query, { maxDepth: 20 }),
    (query) => lucene.parse(query),
  ]);
  bench.report("generated parser (grammar/search.peggy)", generated, "lucene npm package", reference, "queries/s");
}

/**
 * Bulk loader: appends tokens 0, 1, 2, … of one tenant, one second apart, as POST /tokens would
 * create them (the vault's definition, evaluation and sealing), written by the vault's insert.
 */
class Seeder {
  constructor(bench, vault, keys, applicationId, chunk) {
    this.bench = bench;
    this.vault = vault;
    this.keys = keys;
    this.applicationId = applicationId;
    this.chunk = chunk;
    this.ids = [];
  }

  /** A seeder with the tenant's data keys, every version it holds, unwrapped as the vault unwraps them. */
  static async forTenant(bench, vault, tenantId, applicationId, chunk) {
    const { results } = await bench.db.prepare("SELECT version, wrapped FROM tenant_keys WHERE tenant_id = ?").bind(tenantId).all();
    // The local vault's VAULT_MASTER_KEY, which is version 1 of its keyring.
    const keyring = vault.Keyring.of([{ version: 1, key: bench.masterKey }]);
    const versions = await Promise.all(
      results.map(async ({ version, wrapped }) => vault.DataKeys.import(version, await keyring.unwrap(wrapped, tenantId, version))),
    );
    return new Seeder(bench, vault, new vault.TenantKeys(tenantId, versions), applicationId, chunk);
  }

  /** Seals each chunk while the one before it is written. */
  async upTo(size) {
    let sealed = await this.sealNext(size);
    while (sealed.length > 0) {
      // Behind the write fence, as every write of the tenant's tokens (the bench moves no tenant, so it always passes).
      const fence = { tenantId: this.keys.tenantId, writtenAt: Date.now(), retryAfterSeconds: 1 };
      [, sealed] = await Promise.all([this.vault.insertTokens(this.bench.db, fence, sealed, [], fence.writtenAt), this.sealNext(size)]);
    }
  }

  /** The next chunk of tokens, short of `size`, sealed; none once there are `size`. */
  sealNext(size) {
    const from = this.ids.length;
    const to = Math.min(size, from + this.chunk);
    return Promise.all(Array.from({ length: to - from }, (_, offset) => this.token(from + offset)));
  }

  token(i) {
    const { vault } = this;
    const id = randomUUID();
    this.ids.push(id);
    const ssn = i % 2 === 0;
    const definition = vault.definitionOf({
      type: ssn ? "social_security_number" : "token",
      data: ssn ? ssnOf(i) : `value-${i}`,
      metadata: { customer: customerOf(i) },
      containers: [containerOf(i)],
      search_indexes: ssn ? SSN_INDEXES : ["{{ data }}"],
    });
    const refuse = (field, message) => {
      throw new Error(`token ${i}: ${field.join(".")} ${message}`);
    };
    const evaluated = vault.evaluate(definition, refuse, vault.WorkBudget.of(definition.data));
    const at = timeOf(i);
    const by = this.applicationId;
    const stamp = { id, tenantId: this.keys.tenantId, createdBy: by, createdAt: at, modifiedBy: by, modifiedAt: at, cvcExpiresAt: null };
    return vault.sealToken(this.keys, definition, evaluated, stamp);
  }

  blindIndex(value) {
    return this.keys.blindIndex(value);
  }
}

const ssnOf = (i) => {
  const digits = String(100_000_000 + i);
  return `${digits.slice(0, 3)}-${digits.slice(3, 5)}-${digits.slice(5)}`;
};
const timeOf = (i) => BASE_TIME + i * 1000;
/** Five tokens per customer, a hundred per container, a thousand per region: the same at every size. */
const customerOf = (i) => `c${Math.floor(i / 5)}`;
const containerOf = (i) => `/r${Math.floor(i / REGION)}/c${Math.floor(i / 100)}/`;

const LIVE = "(t.expires_at IS NULL OR t.expires_at > ?)";
const ORDER = `ORDER BY t.created_at DESC, t.id DESC LIMIT ${PAGE}`;
/** The vault counts up to 10,000 matches past the page (COUNT_HORIZON); so does the baseline. */
const bounded = (select) => `SELECT count(*) AS n FROM (${select} LIMIT 10000)`;

/**
 * The query kinds, each with the number of tokens it matches and the lookup a developer would write
 * by hand: driving from the side table with CROSS JOIN, which fixes SQLite's join order. The tokens
 * they target are named by their place in a span of 20,000, the span by default, and scaled to `span`.
 */
async function queryKinds(seed, tenantId, span) {
  const at = (place) => Math.floor((place * span) / 20_000);
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
  // Two customers of five tokens, the second's two social security numbers (even tokens) with them.
  const [first, second, excluded] = [customerOf(at(18_000)), customerOf(at(18_000) + 5), containerOf(span - 1)];
  const ssn = ssnOf(2 * at(2_121));
  const region = Math.floor(at(15_000) / REGION);
  const [from, to] = [at(10_000), at(10_000) + 99];
  return [
    { name: "id", query: `id:${seed.ids[at(14_321)]}`, matches: 1, hand: tokensWhere("t.id = ?", [seed.ids[at(14_321)]]) },
    {
      name: "metadata",
      query: `metadata.customer:${customerOf(at(12_345))}`,
      matches: 5,
      hand: sideLookup("token_metadata", "s.key = ? AND s.value = ?", ["customer", customerOf(at(12_345))]),
    },
    {
      name: "data",
      query: `data:${ssn}`,
      matches: 1,
      hand: sideLookup("token_search_index", "s.blind_index = ? AND t.type IN ('social_security_number', 'employer_id_number', 'token')", [
        await seed.blindIndex(ssn),
      ]),
    },
    {
      name: "container exact",
      query: `container:${containerOf(at(12_345))}`,
      matches: 100,
      hand: sideLookup("token_containers", "s.container = ?", [containerOf(at(12_345))]),
    },
    {
      name: "container wildcard",
      query: `container:/r${region}/*`,
      matches: REGION,
      hand: sideLookup("token_containers", "s.container >= ? AND s.container < ?", [`/r${region}/`, `/r${region}0`]),
    },
    {
      name: "date range",
      query: `created_at:[${iso(from)} TO ${iso(to)}]`,
      matches: 100,
      hand: tokensWhere("t.created_at >= ? AND t.created_at <= ?", [timeOf(from), timeOf(to)]),
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

async function measure(bench, key, kind, compiled, { iterations, repeat }) {
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
  const rounds = bench.rounds(5);
  const perRound = Math.max(10, Math.ceil(iterations / rounds));
  const samples = { http: [], hand: [], handPerRun: [], compiledPerRun: [] };
  for (let round = 0; round < rounds; round++) {
    const warmup = round === 0 ? 20 : 3;
    samples.http.push(await bench.latency(overHttp, { iterations: perRound, warmup }));
    samples.hand.push(await bench.latency(() => bench.db.batch(hand), { iterations: perRound, warmup }));
    samples.compiledPerRun.push(await perRun(bench, ours, perRound, repeat));
    samples.handPerRun.push(await perRun(bench, hand, perRound, repeat));
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

/** p50 of one run of the statements, from batches of `repeat` runs: bench.db's round trip is shared out. */
async function perRun(bench, statements, iterations, repeat) {
  const batch = Array.from({ length: repeat }, () => statements).flat();
  const { p50 } = await bench.latency(() => bench.db.batch(batch), { iterations: Math.max(5, Math.round(iterations / 10)), warmup: 2 });
  return p50 / repeat;
}

/** The statements the vault runs for the query, from the compiler itself. */
async function compiledStatements({ compileSearch, parseQuery }, seed, tenantId, query) {
  const parsed = query ? parseQuery(query) : null;
  const data = query?.match(/data:(\S+)/)?.[1];
  const blindIndexes = new Map(data ? [[data, await seed.keys.blindIndexes(data)]] : []);
  const { page, count } = compileSearch(
    parsed,
    { tenantId, now: Date.now(), containers: null, blindIndexes },
    { limit: PAGE, offset: 0, countLimit: 10_000 },
  );
  return { page: [page.sql, page.params], count: [count.sql, count.params] };
}

/** The page the deep-paging figures read: a client that follows a list a thousand pages down. */
const DEEP_PAGE = 1000;

/**
 * Queries for deep paging: selective (the regions of the span, 2% of a million tokens, read through
 * the container index), a date range over the span (read along the created_at index), and every
 * token. Each has `matches` tokens, so its deepest page is known.
 */
function deepPagingKinds(tenantId, span, size) {
  const regions = Array.from({ length: span / REGION }, (_, region) => `container:/r${region}/*`);
  const iso = (i) => new Date(timeOf(i)).toISOString();
  return [
    { name: "selective (regions of the span)", query: regions.join(" OR "), matches: span, tenantId },
    { name: "date range (the span)", query: `created_at:[${iso(0)} TO ${iso(span - 1)}]`, matches: span, tenantId },
    { name: "every token (not selective)", query: null, matches: size, tenantId },
  ];
}

/**
 * One query's page DEEP_PAGE (or its last) next to its page 1: over HTTP by cursor and by number,
 * inside the worker, and the rows the cursor page's statement reads. The cursor is reached 100 tokens
 * a page (a cursor is not bound to the size), then PAGE at a time, and checked against v1's page.
 */
async function measureDeepPaging(bench, vault, key, kind, { iterations }) {
  const page = Math.min(DEEP_PAGE, Math.floor(kind.matches / PAGE));
  const before = (page - 1) * PAGE;
  let start;
  let last;
  for (let read = 0; read < before; ) {
    const size = before - read >= 100 ? 100 : PAGE;
    const reply = await bench.request("POST", "/v2/tokens/search", { key, body: { query: kind.query, size, start } });
    if (reply.body.data.length !== size) throw new Error(`${kind.name}: a page of ${reply.body.data.length} tokens before page ${page}`);
    read += size;
    [start, last] = [reply.body.pagination.next, reply.body.data.at(-1)];
  }
  const bodies = {
    v2first: { query: kind.query, size: PAGE },
    v2deep: { query: kind.query, size: PAGE, start },
    v1first: { query: kind.query, size: PAGE },
    v1deep: { query: kind.query, size: PAGE, page },
  };
  const [v2deep, v1deep] = await Promise.all([
    bench.request("POST", "/v2/tokens/search", { key, body: bodies.v2deep }),
    bench.request("POST", "/tokens/search", { key, body: bodies.v1deep }),
  ]);
  const ids = (reply) => reply.body.data.map((token) => token.id).join();
  if (v2deep.body.data.length !== PAGE || ids(v2deep) !== ids(v1deep)) {
    throw new Error(`${kind.name}: page ${page} by cursor is not page ${page} by number`);
  }

  const worker = { v2first: [], v2deep: [] };
  const send = (path, name) => async () => {
    const response = await fetch(bench.url(path), {
      method: "POST",
      headers: { "SVC-API-KEY": key, "content-type": "application/json" },
      body: JSON.stringify(bodies[name]),
    });
    await response.arrayBuffer();
    worker[name]?.push(Number(/search;dur=([\d.]+)/.exec(response.headers.get("server-timing"))[1]));
  };
  // Turn about in rounds, so that a change of load on this machine weighs on each figure alike.
  const rounds = bench.rounds(5);
  const perRound = Math.max(10, Math.ceil(iterations / rounds));
  const samples = { v2first: [], v2deep: [], v1first: [], v1deep: [] };
  for (let round = 0; round < rounds; round++) {
    const warmup = round === 0 ? 10 : 2;
    for (const name of Object.keys(samples)) {
      const path = name.startsWith("v2") ? "/v2/tokens/search" : "/tokens/search";
      samples[name].push(await bench.latency(send(path, name), { iterations: perRound, warmup }));
    }
  }
  const p50 = (name) => ({ p50: median(samples[name].map((figures) => figures.p50)) });
  const rowsRead = {
    first: await rowsReadAfter(bench, vault, kind, null),
    deep: await rowsReadAfter(bench, vault, kind, { createdAt: Date.parse(last.created_at), id: last.id }),
  };
  return {
    page,
    v2: { first: p50("v2first"), deep: p50("v2deep"), firstWorker: median(worker.v2first), deepWorker: median(worker.v2deep) },
    v1: { first: p50("v1first"), deep: p50("v1deep") },
    rowsRead,
  };
}

/** The rows D1 reads for the cursor page after `after`, in the statement the vault's compiler writes for it. */
async function rowsReadAfter(bench, { compileSearchAfter, parseQuery }, kind, after) {
  const { page } = compileSearchAfter(
    kind.query ? parseQuery(kind.query) : null,
    { tenantId: kind.tenantId, now: Date.now(), containers: null, blindIndexes: new Map() },
    { limit: PAGE + 1, after },
  );
  const result = await bench.db
    .prepare(page.sql)
    .bind(...page.params)
    .all();
  return result.meta.rows_read;
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

/** Queries per second of each parser over `parsingMs`, in alternating rounds of 100 ms so that a change of load hits both alike. */
function parseRates(corpus, parsingMs, parsers) {
  for (let i = 0; i < 3000; i++) for (const parse of parsers) parse(corpus[i % corpus.length]);
  const elapsed = parsers.map(() => 0);
  const parsed = parsers.map(() => 0);
  for (let round = 0; round < Math.ceil(parsingMs / 100); round++) {
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
