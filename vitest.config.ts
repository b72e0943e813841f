import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { build } from "esbuild";
import { defineConfig } from "vitest/config";

/**
 * The fake dispatch namespace (test/support/fake-namespace-worker.ts) as one module, with the
 * outbound worker's own code bundled in: a worker beside the vault, as the namespace is.
 */
async function fakeNamespaceWorker(): Promise<string> {
  const result = await build({
    entryPoints: ["test/support/fake-namespace-worker.ts"],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    external: ["cloudflare:workers"],
    write: false,
    logLevel: "warning",
  });
  return result.outputFiles[0]!.text;
}

export default defineConfig({
  plugins: [
    cloudflareTest(async () => ({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        // A control database (DB, from wrangler.toml) and two data databases: tenants are placed on
        // both, so every suite runs across databases.
        d1Databases: { DB: "token-vault", DB_1: "token-vault-data-1", DB_2: "token-vault-data-2" },
        // The suite sends many requests with one key: wrangler.toml's rate limits are raised out of
        // its way. test/security/4-rate-limits.test.ts and 8-browser-oracles.test.ts hand the worker the
        // three below in their place, real bindings with counters of their own: a key limit of 5 standing
        // in for 10,000, and wrangler.toml's public limits as they are.
        ratelimits: {
          KEY_RATE_LIMIT: { simple: { limit: 1_000_000_000, period: 10 } },
          PUBLIC_KEY_RATE_LIMIT: { simple: { limit: 1_000_000_000, period: 60 } },
          PUBLIC_CLIENT_RATE_LIMIT: { simple: { limit: 1_000_000_000, period: 60 } },
          LOW_KEY_RATE_LIMIT: { simple: { limit: 5, period: 10 } },
          DEFAULT_PUBLIC_KEY_RATE_LIMIT: { simple: { limit: 1_000, period: 60 } },
          DEFAULT_PUBLIC_CLIENT_RATE_LIMIT: { simple: { limit: 60, period: 60 } },
        },
        bindings: {
          // Test-only secrets: fixed so failures reproduce; never used outside tests.
          // A keyring of two key-encryption keys: version 2 wraps, version 1 unwraps what an older
          // deployment wrapped (test/keys simulates it with VAULT_MASTER_KEYS "1:…" alone).
          VAULT_MASTER_KEYS: "2:dGVzdC1tYXN0ZXIta2V5LXR3by10ZXN0LW1hc3RlciE=,1:dGVzdC1tYXN0ZXIta2V5LXRlc3QtbWFzdGVyLWtleSE=",
          // wrangler reads .dev.vars into the worker too, and `npm start` writes its own VAULT_MASTER_KEY
          // there, which the vault refuses beside a different version 1: the tests set it to theirs.
          VAULT_MASTER_KEY: "dGVzdC1tYXN0ZXIta2V5LXRlc3QtbWFzdGVyLWtleSE=",
          BOOTSTRAP_API_KEY: "key_test-bootstrap-key-0123456789abcdefghij",
          OPERATOR_API_KEY: "operator-test-key-0123456789abcdefghijklmnop",
          ALLOW_INSECURE_DESTINATIONS: "true",
          // Webhook retries at once (the backoff schedule is tested on its own), and more failures
          // before disabling than one delivery's retries, so the dead-letter queue is reachable.
          WEBHOOK_RETRY_BASE_S: "0",
          WEBHOOK_FAILURE_LIMIT: "8",
          // Small rotation steps, so a rotation of a few hundred tokens takes many (test/keys/rotation).
          ROTATION_BATCH_SIZE: "5",
          // No rests between them: the tests check what a rotation does; its pace is the bench's (bench/keys.mjs).
          ROTATION_DUTY_CYCLE: "1",
          // Google Pay's root signing keys: the ECv2 test key of Tink's published tests
          // (test/wallets/tink-ecv2-vectors.ts), in force until 2100; tests sign tokens with its private key.
          GOOGLE_PAY_ROOT_SIGNING_KEYS: JSON.stringify({
            keys: [
              {
                keyValue:
                  "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE/1+3HBVSbdv+j7NaArdgMyoSAM43yRydzqdg1TxodSzA96Dj4Mc1EiKroxxunavVIvdxGnJeFViTzFvzFRxyCw==",
                protocolVersion: "ECv2",
                keyExpiration: "4102444800000",
              },
            ],
          }),
          TEST_MIGRATIONS: await readD1Migrations("./migrations"),
        },
        serviceBindings: {
          FAKE_NAMESPACE: { name: "fake-dispatch-namespace", entrypoint: "FakeNamespace" },
          // Apple's servers, where production binds the vault's client certificate (an mTLS certificate binding).
          APPLE_PAY_GATEWAY: "fake-apple-pay-gateway",
        },
        workers: [
          {
            name: "fake-dispatch-namespace",
            modules: [{ type: "ESModule", path: "fake-namespace-worker.mjs", contents: await fakeNamespaceWorker() }],
            compatibilityDate: "2025-11-10",
            compatibilityFlags: ["enable_ctx_exports"],
            workerLoaders: { LOADER: {} },
          },
          {
            name: "fake-apple-pay-gateway",
            modules: true,
            scriptPath: "test/support/fake-apple-pay-gateway.mjs",
            compatibilityDate: "2025-11-10",
          },
        ],
      },
    })),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    // Run from Node against a bundled vault: vitest.clients.config.ts.
    exclude: ["test/clients/**", "test/node/**", "test/elements/**", "test/console/browser/**"],
    setupFiles: ["./test/support/apply-migrations.ts"],
    globalSetup: ["./test/support/loopback-server.ts"],
  },
});
