// Scale-out: the same load (token creates, then proxy calls that detokenize one reference) against a
// vault with 1, 2 and 4 local data databases, with tenants spread over them by placement. Each
// figure is printed next to the same figure with one data database, measured in the same run.
//   npm run bench scale [--tenants=8] [--duration=3000] [--concurrency=32]
import { createServer } from "node:http";
import { readReply } from "../test/support/reply.mjs";

const DATABASES = [1, 2, 4];

export default async function scale(bench) {
  const tenantCount = Number(bench.args.tenants ?? 8);
  const durationMs = Number(bench.args.duration ?? 3000);
  const concurrency = Number(bench.args.concurrency ?? 32);
  const destination = await startEcho();
  const figures = new Map();
  try {
    for (const dataDatabases of DATABASES) {
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
  const one = figures.get(1);
  for (const dataDatabases of DATABASES) {
    const figure = figures.get(dataDatabases);
    const at = `${dataDatabases} data database${dataDatabases === 1 ? "" : "s"}`;
    bench.report(`token creates, ${at}`, figure.creates, "with 1 data database", one.creates, "req/s");
    bench.report(`proxy calls with a reference, ${at}`, figure.proxied, "with 1 data database", one.proxied, "req/s");
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
