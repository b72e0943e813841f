// React latency: a warm POST /reactors/{id}/react of a trivial formula (auth, reactor and formula
// lookup, configuration decryption, a call into the formula's isolate) next to an authenticated
// GET /reactor-formulas/{id} in the same run. Goal: react within 2x of that read. Each with the CPU
// time workerd spends a call of it (bench/lib/measure.mjs).
//   npm run bench reactors [--iterations=500] [--warmup=50] [--cpu=2000]
import { interleavedCpu } from "./lib/measure.mjs";
import { percentiles } from "./lib/statistics.mjs";

const TRIVIAL_CODE = "module.exports = async function (req) { return { raw: { ok: true, args: req.args } }; };";

export default async function reactors(bench) {
  const tenant = await bench.seedTenant();
  const formula = await bench.request("POST", "/reactor-formulas", {
    key: tenant.managementKey,
    body: { name: "Trivial", type: "private", code: TRIVIAL_CODE, configuration: [{ name: "label", type: "string" }] },
  });
  if (formula.status !== 201) throw new Error(`formula creation failed: ${formula.status} ${JSON.stringify(formula.body)}`);
  const caller = await bench.createApplication(tenant, { type: "private", permissions: ["token:use"] });
  const reactor = await bench.request("POST", "/reactors", {
    key: tenant.managementKey,
    body: { name: "Trivial", formula: { id: formula.body.id }, configuration: { label: "bench" } },
  });
  if (reactor.status !== 201) throw new Error(`reactor creation failed: ${reactor.status} ${JSON.stringify(reactor.body)}`);

  const reactPath = `/reactors/${reactor.body.id}/react`;
  const reactBody = JSON.stringify({ args: { amount: 100 } });
  const check = await bench.request("POST", reactPath, { key: caller.key, raw: reactBody });
  if (check.status !== 200) throw new Error(`react failed: ${check.status} ${JSON.stringify(check.body)}`);

  const { iterations, warmup, cpu: cpuRequests } = bench.sizes({ iterations: [500, 1], warmup: [50, 0], cpu: [2000, 2] });
  const formulaPath = `/reactor-formulas/${formula.body.id}`;
  const readFormula = () =>
    fetch(bench.url(formulaPath), { headers: { "SVC-API-KEY": tenant.managementKey } }).then((r) => r.arrayBuffer());
  const runReactor = () =>
    fetch(bench.url(reactPath), {
      method: "POST",
      headers: { "SVC-API-KEY": caller.key, "content-type": "application/json" },
      body: reactBody,
    }).then((r) => r.arrayBuffer());

  // Interleaved, so both see the same machine load: a busy machine otherwise skews the ratio.
  const samples = { read: [], react: [] };
  for (let i = 0; i < warmup; i++) await Promise.all([readFormula(), runReactor()]);
  for (let i = 0; i < iterations; i++) {
    samples.read.push(await timed(readFormula));
    samples.react.push(await timed(runReactor));
  }
  const read = percentiles(samples.read);
  const react = percentiles(samples.react);
  const cpu = await interleavedCpu(bench, [runReactor, readFormula], cpuRequests);
  bench.report("warm POST /reactors/{id}/react p50", react.p50, "GET /reactor-formulas/{id} p50", read.p50, "ms", { cpu });
  bench.report("warm POST /reactors/{id}/react p95", react.p95, "GET /reactor-formulas/{id} p95", read.p95, "ms", { cpu });
}

async function timed(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}
