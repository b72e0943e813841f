import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * Concurrent deduplicating creates over real HTTP connections, as `npm run load` sends them: the
 * requests overlap in the vault far more than calls made from inside workerd do, so a guard that
 * only the read before the insert upholds shows here.
 */

const CONCURRENT = 20;
const ROUNDS = 5;

let vault: Awaited<ReturnType<typeof startLocalVault>>;

async function send(path: string, key: Record<string, string>, body: unknown) {
  const reply = await fetch(`${vault.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...key },
    body: JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as any };
}

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "node-tests-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir });
});

afterAll(async () => {
  await vault?.dispose();
});

describe("deduplication over HTTP", () => {
  it.each([
    ["plain permissions (any container)", { permissions: ["token:create"], rules: [] }],
    ["access rules", { permissions: [], rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:create"] }] }],
  ])(`${CONCURRENT} concurrent creates of one SSN give one token, round after round, for a caller with %s`, async (_, grants) => {
    const tenant = await send("/tenants", { "SVC-OPERATOR-KEY": vault.operatorKey }, { name: "dedup" });
    const management = { "SVC-API-KEY": tenant.body.application.key };
    const application = await send("/applications", management, { name: "creator", type: "private", ...grants });
    expect(application.status).toBe(201);
    for (let round = 0; round < ROUNDS; round++) {
      const body = { type: "social_security_number", data: `321-54-${9000 + round}`, deduplicate_token: true };
      const replies = await Promise.all(
        Array.from({ length: CONCURRENT }, () => send("/tokens", { "SVC-API-KEY": application.body.key }, body)),
      );
      expect(new Set(replies.map((reply) => reply.body.id)).size, `round ${round}`).toBe(1);
      expect(replies.filter((reply) => reply.status === 201)).toHaveLength(1);
    }
  });
});
