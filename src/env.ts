import { z } from "zod";
import { ConfigurationError } from "./errors";
import { IDEMPOTENCY_LEASE_MS } from "./limits";

/**
 * The bindings, typed from wrangler.toml by `wrangler types` (src/worker-configuration.generated.d.ts,
 * kept current by `npm test`). The Worker Loader is bound locally; production binds the dispatch
 * namespace instead, which wrangler.toml does not declare. Configuration values are parsed
 * separately by `configOf`.
 */
export type Bindings = Pick<
  Cloudflare.Env,
  | "DB"
  | "AUDIT_QUEUE"
  | "WEBHOOK_QUEUE"
  | "ROTATION_QUEUE"
  | "REACTION_QUEUE"
  | "KEY_RATE_LIMIT"
  | "PUBLIC_KEY_RATE_LIMIT"
  | "PUBLIC_CLIENT_RATE_LIMIT"
  | "ASSETS"
  | "DOCUMENTS"
> &
  Partial<Pick<Cloudflare.Env, "LOADER">> & { DISPATCHER?: DispatchNamespace } & {
    /**
     * Apple Pay's servers, reached with the vault's merchant identity certificate: in production an mTLS
     * certificate binding (wrangler.toml, `[[mtls_certificates]]`), which has no local form; unbound, the
     * domain and session routes answer 503 (docs/wallets.md).
     */
    APPLE_PAY_GATEWAY?: Fetcher;
  };

const flag = (fallback: "true" | "false" = "false") =>
  z
    .enum(["true", "false"])
    .default(fallback)
    .transform((value) => value === "true");

const positiveInteger = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const GooglePayRootKeysSchema = z.object({
  keys: z.array(z.object({ keyValue: z.string(), protocolVersion: z.string(), keyExpiration: z.string().optional() })).max(20),
});

export const ConfigSchema = z.object({
  HEADER_PREFIX: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9]{0,19}$/, "must be 1-20 letters or digits, starting with a letter")
    .default("SVC"),
  /** The keyring's version 1, for deployments that predate VAULT_MASTER_KEYS. */
  VAULT_MASTER_KEY: z
    .string()
    .refine((value) => decodedLength(value) === 32, "must be 32 random bytes encoded as base64")
    .optional(),
  /** The keyring: versioned key-encryption keys, `2:<base64>,1:<base64>`; the highest wraps, every one unwraps. */
  VAULT_MASTER_KEYS: z
    .string()
    .transform((value, context) => {
      const entries = value
        .split(",")
        .map((entry) => entry.trim())
        .filter(Boolean)
        .map((entry) => {
          const [version, key] = entry.split(":");
          return { version: Number(version), key: key ?? "" };
        });
      for (const { version, key } of entries) {
        if (!Number.isSafeInteger(version) || version < 1)
          context.addIssue({ code: "custom", message: "versions must be positive integers, as in 2:<base64>,1:<base64>" });
        if (decodedLength(key) !== 32)
          context.addIssue({ code: "custom", message: `version ${version}: must be 32 random bytes encoded as base64` });
      }
      if (new Set(entries.map((entry) => entry.version)).size !== entries.length)
        context.addIssue({ code: "custom", message: "lists a version twice" });
      if (entries.length === 0) context.addIssue({ code: "custom", message: "lists no key" });
      return entries;
    })
    .optional(),
  BOOTSTRAP_API_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  OPERATOR_API_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  ALLOW_INSECURE_DESTINATIONS: flag(),
  SANDBOX_HOST: z.enum(["loader", "dispatch"]).default("loader"),
  SANDBOX_WALL_TIME_MS: positiveInteger(30_000),
  SANDBOX_CPU_MS: positiveInteger(200),
  PROXY_TIMEOUT_MS: positiveInteger(25_000),
  /** How long an isolate may reuse an API key's or proxy key's lookup (src/auth/lookup-cache.ts); 0: never. */
  CREDENTIAL_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
  /** Seconds a card's cvc is kept after the token is created or updated; the cron then drops it (PCI DSS 3.3.1). */
  CARD_CVC_RETENTION_S: z.coerce.number().int().min(0).default(3_600),
  /** A /proxy call without a proxy key forwards to its {P}-PROXY-URL header (an ephemeral proxy). */
  EPHEMERAL_PROXY: flag("true"),
  /** Days the audit log keeps an entry; the cron purges older ones and re-anchors the chain. */
  AUDIT_RETENTION_DAYS: positiveInteger(365),
  /** Only benchmarks turn auditing off, to measure what it costs (docs/operations.md, "Audit log"). */
  AUDIT_LOG: flag("true"),
  /** A webhook is disabled after this many deliveries failed in a row. */
  WEBHOOK_FAILURE_LIMIT: positiveInteger(10),
  /** Seconds before a failed delivery's first retry; each further retry waits twice as long. */
  WEBHOOK_RETRY_BASE_S: z.coerce.number().int().min(0).max(3_600).default(30),
  /**
   * How long a request's claim of its idempotency key holds without an answer (src/idempotency/). It
   * decides how soon a retry may go on after a crash, never whether a write is doubled; under a second
   * a live request would lose its claim to retries, over an hour a crashed one would keep it that long.
   */
  IDEMPOTENCY_LEASE_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(IDEMPOTENCY_LEASE_MS),
  /** Tokens (and other sealed records) one step of a data-key rotation re-encrypts. */
  ROTATION_BATCH_SIZE: z.coerce.number().int().min(1).max(1_000).default(100),
  /**
   * The share of the time a data-key rotation may work: after each piece of re-encryption it rests
   * for the rest (src/keys/reencryption.ts, paceOf), so that traffic finds its database free. At
   * least 0.05 (rests of 19 times the work): below it a rotation would barely move.
   */
  ROTATION_DUTY_CYCLE: z.coerce.number().min(0.05).max(1).default(0.25),
  /**
   * Google's root signing keys for Google Pay tokens, the JSON Google publishes (`{"keys": [{keyValue,
   * protocolVersion, keyExpiration}]}`), set by the operator (docs/decisions.md, "Google Pay root signing
   * keys"). Without it, POST /google-pay refuses every token.
   */
  GOOGLE_PAY_ROOT_SIGNING_KEYS: z
    .string()
    .default('{"keys":[]}')
    .transform((value, context) => {
      const parsed = GooglePayRootKeysSchema.safeParse(
        (() => {
          try {
            return JSON.parse(value);
          } catch {
            return undefined;
          }
        })(),
      );
      if (!parsed.success) {
        context.addIssue({
          code: "custom",
          message: 'must be the JSON Google publishes: {"keys": [{"keyValue", "protocolVersion", "keyExpiration"}]}',
        });
        return [];
      }
      return parsed.data.keys;
    }),
  /**
   * Apple Pay on the web (src/apple-pay/domains.ts): `true` registers domains with Apple's sandbox
   * (apple-pay-gateway-cert.apple.com) instead of production, for a deployment whose certificate is a sandbox one.
   */
  APPLE_PAY_SANDBOX: flag(),
  /** The vault's platform integrator id with Apple (`encryptTo` of its domain registrations); left out when unset. */
  APPLE_PAY_PLATFORM_INTEGRATOR_ID: z.string().min(1).max(255).optional(),
  CLOUDFLARE_ACCOUNT_ID: z.string().optional(),
  CLOUDFLARE_API_TOKEN: z.string().optional(),
  CLOUDFLARE_API_BASE: z.url().default("https://api.cloudflare.com/client/v4"),
  DISPATCH_NAMESPACE: z.string().optional(),
});

export interface KeyEncryptionKey {
  version: number;
  /** 32 bytes, base64. */
  key: string;
}

export type Config = z.infer<typeof ConfigSchema> & {
  /** The key-encryption keys, highest version first: it wraps; every one unwraps. */
  keyring: KeyEncryptionKey[];
  /** Header names derived from HEADER_PREFIX, lower-cased as the Fetch API reports them. */
  headers: {
    apiKey: string;
    proxyKey: string;
    proxyUrl: string;
    /** Client-encrypted token requests a proxy call carries (src/proxies/encrypted-header.ts). */
    encrypted: string;
    traceId: string;
    /** Answered by /proxy: the status the destination answered. */
    proxyDestinationStatus: string;
    idempotencyKey: string;
    operatorKey: string;
    consistencyBookmark: string;
  };
  /** Every one of those names: none of them is forwarded to a proxy's destination. */
  ownHeaders: ReadonlySet<string>;
  /** Query parameter that may carry the proxy key. */
  proxyKeyParam: string;
};

function decodedLength(base64: string): number {
  try {
    return atob(base64).length;
  } catch {
    return -1;
  }
}

const parsed = new WeakMap<object, Config>();

/** VAULT_MASTER_KEYS, with VAULT_MASTER_KEY as version 1 when the list has no version 1 of its own. */
function keyringOf(listed: KeyEncryptionKey[], legacy: string | undefined): KeyEncryptionKey[] {
  const keyring = [...listed];
  const first = keyring.find((entry) => entry.version === 1);
  if (legacy !== undefined && first && first.key !== legacy) {
    throw new ConfigurationError("Invalid configuration: VAULT_MASTER_KEY differs from version 1 of VAULT_MASTER_KEYS; keep one of them");
  }
  if (legacy !== undefined && !first) keyring.push({ version: 1, key: legacy });
  if (keyring.length === 0) {
    throw new ConfigurationError("Invalid configuration: VAULT_MASTER_KEY is required (32 random bytes, base64), or VAULT_MASTER_KEYS");
  }
  return keyring.sort((a, b) => b.version - a.version);
}

/** Parses the configuration once per env object; a missing or malformed value is a clear error. */
export function configOf(env: object): Config {
  const cached = parsed.get(env);
  if (cached) return cached;
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`);
    throw new ConfigurationError(`Invalid configuration: ${problems.join("; ")}`);
  }
  const prefix = result.data.HEADER_PREFIX.toLowerCase();
  const headers = {
    apiKey: `${prefix}-api-key`,
    proxyKey: `${prefix}-proxy-key`,
    proxyUrl: `${prefix}-proxy-url`,
    encrypted: `${prefix}-encrypted`,
    traceId: `${prefix}-trace-id`,
    proxyDestinationStatus: `${prefix}-proxy-destination-status`,
    idempotencyKey: `${prefix}-idempotency-key`,
    operatorKey: `${prefix}-operator-key`,
    consistencyBookmark: `${prefix}-consistency-bookmark`,
  };
  const config: Config = {
    ...result.data,
    keyring: keyringOf(result.data.VAULT_MASTER_KEYS ?? [], result.data.VAULT_MASTER_KEY),
    headers,
    ownHeaders: new Set(Object.values(headers)),
    proxyKeyParam: `${prefix}-proxy-key`,
  };
  parsed.set(env, config);
  return config;
}
