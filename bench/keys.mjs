// Keys: what envelope encryption costs, and what a data-key rotation does, in one run.
//   1. Envelope encryption: the same calls (create, read, `data:` search, a proxy call detokenizing
//      one reference) on this vault and on one built from the commit before envelope encryption,
//      whose keys were derived from the master key in each isolate. Each on a fresh vault, turn about;
//      beside each p50, the CPU time each vault's workerd spends a call.
//   2. Rotation: a tenant's tokens re-encrypted by the rotation job, in rows per second next to the
//      rate at which the same vault created them (POST /tokenize, 100 a call); and the p50 and p95
//      of reads, creates and proxy calls, of the rotating tenant and of another, while the job runs,
//      next to the same calls, turn about, before it started.
//   npm run bench keys [--iterations=400] [--duration=3000] [--searchable=1000] [--tokens=20000]
//     [--parts=envelope,rotation] [--cpu=2000]
import { buildCommit } from "./lib/builds.mjs";
import { interleavedCpu, interleavedLatency, interleavedThroughput, send, startEcho } from "./lib/measure.mjs";
import { percentiles } from "./lib/statistics.mjs";

/** The last commit before envelope encryption (e13f13c, "Keys: envelope encryption"). */
const PRE_ENVELOPE = "e13f13c^";
const SSN_BASE = 100_000_000;
const SETTLE_MS = 5_000;
const STALLED_MS = 60_000;

export default async function keys(bench) {
  const {
    iterations,
    duration: durationMs,
    searchable,
    tokens,
    cpu: cpuRequests,
  } = bench.sizes({ iterations: [400, 1], duration: [3000, 50], searchable: [1000, 100], tokens: [20_000, 200], cpu: [2000, 2] });
  const parts = String(bench.args.parts ?? "envelope,rotation").split(",");
  const destination = await startEcho();
  try {
    if (parts.includes("envelope")) await envelopeCost(bench, destination.url, { iterations, durationMs, searchable, cpuRequests });
    if (parts.includes("rotation")) await rotation(bench, tokens, iterations, destination.url);
  } finally {
    await destination.close();
  }
}

async function envelopeCost(bench, destinationUrl, { iterations, durationMs, searchable, cpuRequests }) {
  // Auditing off on both: the audit send changed after PRE_ENVELOPE (one sendBatch per isolate),
  // and this comparison is of the keys alone.
  const bindings = { AUDIT_LOG: "false" };
  // A smoke run checks the scenarios on the run's own vault: building an old commit, and starting a
  // vault, take long.
  const vaults = bench.smoke
    ? []
    : await Promise.all([bench.startVault({ bindings }), bench.startVault({ buildDir: buildCommit(PRE_ENVELOPE).buildDir, bindings })]);
  const [after, before] = bench.smoke ? [bench.vault, bench.vault] : vaults;
  try {
    const [envelope, derived] = await Promise.all([
      scenarios(after, destinationUrl, searchable),
      scenarios(before, destinationUrl, searchable),
    ]);
    console.log(`  envelope encryption (this build) and derived keys (${PRE_ENVELOPE}), fresh vaults, auditing off, turn about`);
    for (const name of Object.keys(envelope)) {
      const [now, then] = await interleavedLatency(bench, [envelope[name], derived[name]], iterations);
      const [nowRate, thenRate] = await interleavedThroughput(bench, [envelope[name], derived[name]], durationMs);
      // Each build's vault runs in a workerd of its own.
      const cpu = await interleavedCpu(bench, [envelope[name], derived[name]], cpuRequests, [after.workerd, before.workerd]);
      bench.report(`  ${name} p50`, now.p50, "derived keys p50", then.p50, "ms", { cpu });
      bench.report(`  ${name} throughput`, nowRate.rps, "derived keys", thenRate.rps, "req/s");
    }
  } finally {
    await Promise.all(vaults.map((vault) => vault.dispose()));
  }
}

/** A tenant with `searchable` tokens (a multiple of 100) and a proxy on the vault; answers each scenario's call. */
async function scenarios(vault, destinationUrl, searchable) {
  const post = async (path, headers, body, status = 201) => {
    const reply = await send(`${vault.baseUrl}${path}`, body, headers);
    if (reply.status !== status) throw new Error(`POST ${path} failed: ${reply.status} ${reply.text.slice(0, 300)}`);
    return JSON.parse(reply.text);
  };
  const tenant = await post("/tenants", { "SVC-OPERATOR-KEY": vault.operatorKey }, { name: "keys-bench" });
  const management = { "SVC-API-KEY": tenant.application.key };
  const caller = await post("/applications", management, {
    name: "caller",
    type: "private",
    rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read", "token:search", "token:use"] }],
  });
  const auth = { "SVC-API-KEY": caller.key };
  const ssn = ssnSequence();
  const created = [];
  for (let i = 0; i < searchable; i += 100) {
    created.push(
      ...(await post(
        "/tokenize",
        auth,
        Array.from({ length: 100 }, () => ({ type: "social_security_number", data: ssn() })),
      )),
    );
  }
  const token = created[0];
  const proxy = await post("/proxies", management, { name: "bench", destination_url: destinationUrl });
  const get = async (path) => {
    const response = await fetch(`${vault.baseUrl}${path}`, { headers: auth });
    if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`);
    await response.arrayBuffer();
  };
  let probe = 0;
  return {
    "create a token": () => post("/tokens", auth, { type: "social_security_number", data: ssn() }),
    "read a token": () => get(`/tokens/${created[probe++ % created.length].id}`),
    "data: search": () => post("/tokens/search", auth, { query: `data:${created[probe++ % created.length].data}` }, 200),
    "proxy, 1 reference": () => post("/proxy/charges", { "SVC-PROXY-KEY": proxy.key, ...auth }, { ssn: `{{ ${token.id} }}` }, 200),
  };
}

/**
 * A data-key rotation of `count` tokens, and what it does to traffic: token reads, creates and proxy
 * calls (one detokenized reference) of the rotating tenant and of another tenant, turn about, before
 * the rotation and while it re-encrypts, in one run.
 */
async function rotation(bench, count, iterations, destinationUrl) {
  const operator = { "SVC-OPERATOR-KEY": bench.operatorKey };
  const ssn = ssnSequence();
  const batch = (size = 100) => Array.from({ length: size }, () => ({ type: "social_security_number", data: ssn() }));
  const rotating = await trafficOf(bench, destinationUrl, batch);
  const other = await trafficOf(bench, destinationUrl, batch);
  const seedingStarted = performance.now();
  for (let i = 0; i < count; i += 100) {
    const reply = await bench.request("POST", "/tokenize", { key: rotating.key, body: batch() });
    if (reply.status !== 201) throw new Error(`tokenize failed: ${reply.status}`);
    if (rotating.ids.length < 1_000) rotating.ids.push(...reply.body.map((token) => token.id));
  }
  const createdPerSecond = count / ((performance.now() - seedingStarted) / 1000);
  // Seeding leaves work behind (its audit entries, the database's checkpoint): let it settle, so
  // that the figures before the rotation are not the seeding's aftermath.
  await new Promise((resolve) => setTimeout(resolve, bench.smoke ? 0 : SETTLE_MS));
  const calls = [
    ...Object.entries(rotating.calls).map(([name, fn]) => [`rotating tenant: ${name}`, fn]),
    ...Object.entries(other.calls).map(([name, fn]) => [`other tenant: ${name}`, fn]),
  ];
  /** Runs every call once a round while `more(round)`, and answers each call's timings by name. */
  const turnAbout = async (more) => {
    const samples = Object.fromEntries(calls.map(([name]) => [name, []]));
    for (let round = 0; more(round); round++) {
      for (const [name, fn] of calls) {
        const start = performance.now();
        await fn();
        samples[name].push(performance.now() - start);
      }
    }
    return samples;
  };
  const warmup = Math.min(50, iterations);
  await turnAbout((round) => round < warmup);
  const before = await turnAbout((round) => round < iterations);

  // The job's progress, polled beside the measurements: when it starts and stops re-encrypting.
  const job = { state: "waiting", done: 0, runningAt: null, finishedAt: null };
  const started = await bench.request("POST", `/tenants/${rotating.tenantId}/rotation`, { headers: operator });
  if (started.status !== 202) throw new Error(`rotation did not start: ${started.status} ${JSON.stringify(started.body)}`);
  // The bench has no cron to restart a chain that stopped: a rotation that makes no progress for
  // STALLED_MS fails the benchmark instead of holding it forever.
  let progressAt = performance.now();
  const polling = (async () => {
    while (job.state !== "done") {
      const reply = await bench.request("GET", `/tenants/${rotating.tenantId}/rotation`, { headers: operator });
      if (reply.status !== 200) throw new Error(`rotation status answered ${reply.status}`);
      const now = performance.now();
      if (reply.body.state !== job.state || reply.body.done !== job.done) progressAt = now;
      if (now - progressAt > STALLED_MS)
        throw new Error(`the rotation made no progress for ${STALLED_MS} ms: ${JSON.stringify(reply.body)}`);
      if (reply.body.state !== "waiting") job.runningAt ??= now;
      if (reply.body.state === "finishing" || reply.body.state === "done") job.finishedAt ??= now;
      Object.assign(job, { state: reply.body.state, done: reply.body.done });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  // A failed poll ends the waits below too, and is thrown by `await polling`.
  polling.catch(() => {
    job.state = "failed";
  });
  while (job.runningAt === null && job.state !== "failed") await new Promise((resolve) => setTimeout(resolve, 20));
  // For as long as the job re-encrypts (a smoke run: one round, whatever the job's state).
  const during = await turnAbout((round) => (bench.smoke ? round < 1 : job.state === "running"));
  await polling;
  if (during[calls[0][0]].length === 0)
    throw new Error(`the rotation of ${count} tokens ended before one round of calls: give it more --tokens`);
  const rowsPerSecond = job.done / (Math.max(1, job.finishedAt - job.runningAt) / 1000);
  console.log(
    `  data-key rotation of ${count} tokens (${job.done} records re-encrypted), ${during[calls[0][0]].length} rounds of calls while it ran`,
  );
  bench.report("  rotation re-encrypts", rowsPerSecond, "POST /tokenize creates", createdPerSecond, "rows/s");
  for (const [name] of calls) {
    const [now, then] = [percentiles(during[name]), percentiles(before[name])];
    bench.report(`  ${name} p50 while it runs`, now.p50, "p50 before", then.p50, "ms");
    bench.report(`  ${name} p95 while it runs`, now.p95, "p95 before", then.p95, "ms");
  }
}

/** A tenant with a reading and creating application, a proxy and a few tokens: its calls, and the ids its reads go through. */
async function trafficOf(bench, destinationUrl, batch) {
  const tenant = await bench.seedTenant();
  const caller = await bench.createApplication(tenant, {
    type: "private",
    rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read", "token:use"] }],
  });
  const proxy = await bench.request("POST", "/proxies", {
    key: tenant.managementKey,
    body: { name: "rotation bench", destination_url: destinationUrl },
  });
  if (proxy.status !== 201) throw new Error(`proxy creation failed: ${proxy.status}`);
  const seeded = await bench.request("POST", "/tokenize", { key: caller.key, body: batch() });
  if (seeded.status !== 201) throw new Error(`tokenize failed: ${seeded.status}`);
  const ids = seeded.body.map((token) => token.id);
  let probe = 0;
  const expect = (status, reply, what) => {
    if (reply.status !== status) throw new Error(`${what} answered ${reply.status}`);
  };
  return {
    tenantId: tenant.tenantId,
    key: caller.key,
    ids,
    calls: {
      read: async () => expect(200, await bench.request("GET", `/tokens/${ids[probe++ % ids.length]}`, { key: caller.key }), "read"),
      create: async () => expect(201, await bench.request("POST", "/tokens", { key: caller.key, body: batch(1)[0] }), "create"),
      "proxy, 1 reference": async () =>
        expect(
          200,
          await bench.request("POST", "/proxy", {
            headers: { "SVC-API-KEY": caller.key, "SVC-PROXY-KEY": proxy.body.key },
            body: { ssn: `{{ ${ids[probe++ % ids.length]} }}` },
          }),
          "proxy call",
        ),
    },
  };
}

/** A fresh sequence of distinct, well-formed social security numbers, from SSN_BASE on. */
function ssnSequence() {
  let serial = SSN_BASE;
  return () => {
    const digits = String(serial++);
    return `${digits.slice(0, 3)}-${digits.slice(3, 5)}-${digits.slice(5)}`;
  };
}
