// Authentication overhead: an authenticated GET /applications/{id} (key hash lookup + permission
// check + tenant-scoped read) next to GET /health, which needs no key, in the same run.
//   npm run bench auth [--iterations=1000]
export default async function auth(bench) {
  const tenant = await bench.seedTenant();
  const path = `/applications/${tenant.managementApplicationId}`;
  const check = await bench.request("GET", path, { key: tenant.managementKey });
  if (check.status !== 200) throw new Error(`authenticated read failed: ${check.status}`);

  const { iterations } = bench.sizes({ iterations: [1000, 1] });
  const baseline = await bench.latency(() => fetch(bench.url("/health")).then((r) => r.arrayBuffer()), { iterations });
  const authenticated = await bench.latency(
    () => fetch(bench.url(path), { headers: { "SVC-API-KEY": tenant.managementKey } }).then((r) => r.arrayBuffer()),
    { iterations },
  );
  bench.report("authenticated GET /applications/{id} p50", authenticated.p50, "GET /health p50", baseline.p50, "ms");
  bench.report("authenticated GET /applications/{id} p95", authenticated.p95, "GET /health p95", baseline.p95, "ms");
}
