// Authentication overhead, in the same run:
//   - the authentication floor: an authenticated GET of a small resource that needs no database
//     read (GET /permissions?application_type=public: key lookup, cached after the first call, and
//     the answer), next to GET /health, which needs no key;
//   - an authenticated GET /applications/{id} (the same, then one tenant-scoped D1 read), next to
//     GET /health and to a worker beside the vault that makes the same D1 read and answers the row.
// Each with the CPU time workerd spends a call of it and of its baseline (bench/lib/measure.mjs).
//   npm run bench auth [--iterations=1000] [--cpu=2000]
import { interleavedCpu } from "./lib/measure.mjs";

export default async function auth(bench) {
  const tenant = await bench.seedTenant();
  const application = `/applications/${tenant.managementApplicationId}`;
  const permissions = "/permissions?application_type=public";
  const headers = { "SVC-API-KEY": tenant.managementKey };
  for (const path of [application, permissions]) {
    const check = await bench.request("GET", path, { key: tenant.managementKey });
    if (check.status !== 200) throw new Error(`authenticated GET ${path} failed: ${check.status}`);
  }
  const get = (url, init) => () => fetch(url, init).then((reply) => reply.arrayBuffer());

  const { iterations, cpu: cpuRequests } = bench.sizes({ iterations: [1000, 1], cpu: [2000, 2] });
  const calls = {
    health: get(bench.url("/health")),
    floor: get(bench.url(permissions), { headers }),
    read: get(bench.readUrl(tenant.tenantId, tenant.managementApplicationId)),
    authenticated: get(bench.url(application), { headers }),
  };
  const health = await bench.latency(calls.health, { iterations });
  const floor = await bench.latency(calls.floor, { iterations });
  const read = await bench.latency(calls.read, { iterations });
  const authenticated = await bench.latency(calls.authenticated, { iterations });
  const [healthCpu, floorCpu, readCpu, authenticatedCpu] = await interleavedCpu(bench, Object.values(calls), cpuRequests);
  const floorOverHealth = { cpu: [floorCpu, healthCpu] };
  const authenticatedOverHealth = { cpu: [authenticatedCpu, healthCpu] };
  const authenticatedOverRead = { cpu: [authenticatedCpu, readCpu] };
  bench.report("authenticated GET /permissions p50", floor.p50, "GET /health p50", health.p50, "ms", floorOverHealth);
  bench.report("authenticated GET /permissions p95", floor.p95, "GET /health p95", health.p95, "ms", floorOverHealth);
  bench.report("authenticated GET /applications/{id} p50", authenticated.p50, "GET /health p50", health.p50, "ms", authenticatedOverHealth);
  bench.report("authenticated GET /applications/{id} p95", authenticated.p95, "GET /health p95", health.p95, "ms", authenticatedOverHealth);
  bench.report(
    "authenticated GET /applications/{id} p50",
    authenticated.p50,
    "a worker's one D1 read p50",
    read.p50,
    "ms",
    authenticatedOverRead,
  );
  bench.report(
    "authenticated GET /applications/{id} p95",
    authenticated.p95,
    "a worker's one D1 read p95",
    read.p95,
    "ms",
    authenticatedOverRead,
  );
}
