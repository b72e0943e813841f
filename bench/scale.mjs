// Scale-out: the same load (token creates, then proxy calls that detokenize one reference) against a
// vault with 1, 2 and 4 local data databases, with tenants spread over them by placement. Each
// figure is printed next to the same figure with the first number of data databases (one), measured
// in the same run.
//   npm run bench scale [--databases=1,2,4] [--tenants=8] [--duration=3000] [--concurrency=32]
import { createServer } from "node:http";
import { readReply } from "../test/support/reply.mjs";

export default async function scale(bench) {
  const {
    databases,
    tenants: tenantCount,
    duration: durationMs,
    concurrency,
  } = bench.sizes({ databases: [[1, 2, 4], [2]], tenants: [8, 2], duration: [3000, 50], concurrency: [32, 4] });
  if (tenantCount < Math.max(...databases)) throw new Error("every data database needs a tenant: give at least as many tenants");
  const destination = await startEcho();
  const figures = new Map();
  try {
    for (const dataDatabases of databases) {
      const vault = await bench.startVault({ dataDatabases });
      try {
        const tenants = [];
        for (let i = 0; i < tenantCount; i++) tenants.push(await seedTenant(vault, destination.url));
        const placed = new Set(tenants.map((tenant) => tenant.database));
        if (placed.size !== dataDatabases) throw new Error(`tenants landed in ${placed.size} of ${dataDatabases} data databases`);
        const creates = await bench.throughput(
          (i) => {
            const tenant = tenants[i % tenants.length];
            return expect(201, send(vault.baseUrl, "POST", "/tokens", { key: tenant.key, body: { type: "token", data: `value ${i}` } }));
          },
          { concurrency, durationMs },
        );
        const proxied = await bench.throughput(
          (i) => {
            const tenant = tenants[i % tenants.length];
            const body = { card: `{{ ${tenant.tokenId} }}` };
            return expect(200, send(vault.baseUrl, "POST", "/proxy", { headers: { "SVC-PROXY-KEY": tenant.proxyKey }, body }));
          },
          { concurrency, durationMs },
        );
        figures.set(dataDatabases, { creates: creates.rps, proxied: proxied.rps });
      } finally {
        await vault.dispose();
      }
    }
  } finally {
    await destination.close();
  }
  const counted = (count) => `${count} data database${count === 1 ? "" : "s"}`;
  const first = figures.get(databases[0]);
  for (const dataDatabases of databases) {
    const figure = figures.get(dataDatabases);
    const at = counted(dataDatabases);
    bench.report(`token creates, ${at}`, figure.creates, `with ${counted(databases[0])}`, first.creates, "req/s");
    bench.report(`proxy calls with a reference, ${at}`, figure.proxied, `with ${counted(databases[0])}`, first.proxied, "req/s");
  }
}

async function send(baseUrl, method, path, { key, headers = {}, body } = {}) {
  const sent = { "content-type": "application/json", ...headers, ...(key ? { "SVC-API-KEY": key } : {}) };
  return readReply(
    await fetch(`${baseUrl}${path}`, { method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body) }),
  );
}

async function expect(status, reply) {
  const answered = await reply;
  if (answered.status !== status) throw new Error(`expected ${status}, got ${answered.status}: ${answered.text.slice(0, 200)}`);
  return answered;
}

/** A tenant (placed by the vault), an application that creates and uses tokens, one token, and a proxy acting as that application. */
async function seedTenant(vault, destinationUrl) {
  const created = await expect(
    201,
    send(vault.baseUrl, "POST", "/tenants", { headers: { "SVC-OPERATOR-KEY": vault.operatorKey }, body: { name: "scale" } }),
  );
  const managementKey = created.body.application.key;
  const application = await expect(
    201,
    send(vault.baseUrl, "POST", "/applications", {
      key: managementKey,
      body: { name: "scale", type: "private", permissions: ["token:create", "token:use"] },
    }),
  );
  const token = await expect(
    201,
    send(vault.baseUrl, "POST", "/tokens", { key: application.body.key, body: { type: "token", data: "4242" } }),
  );
  const proxy = await expect(
    201,
    send(vault.baseUrl, "POST", "/proxies", {
      key: managementKey,
      body: { name: "scale", destination_url: destinationUrl, require_auth: false, application: { id: application.body.id } },
    }),
  );
  return { database: created.body.tenant.database, key: application.body.key, tokenId: token.body.id, proxyKey: proxy.body.key };
}

/** A destination on loopback that answers every request with a small JSON body. */
async function startEcho() {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.setHeader("content-type", "application/json");
      response.end('{"ok":true}');
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
