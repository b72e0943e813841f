import { z } from "zod";
import { ConfigurationError } from "./http/problem";

/**
 * The bindings, typed from wrangler.toml by `wrangler types` (src/worker-configuration.generated.d.ts,
 * kept current by `npm test`). The Worker Loader is bound locally; production binds the dispatch
 * namespace instead, which wrangler.toml does not declare. Configuration values are parsed
 * separately by `configOf`.
 */
export type Bindings = Pick<Cloudflare.Env, "DB" | "AUDIT_QUEUE" | "WEBHOOK_QUEUE"> &
  Partial<Pick<Cloudflare.Env, "LOADER">> & { DISPATCHER?: DispatchNamespace };

const flag = (fallback: "true" | "false" = "false") =>
  z
    .enum(["true", "false"])
    .default(fallback)
    .transform((value) => value === "true");

const positiveInteger = (fallback: number) => z.coerce.number().int().positive().default(fallback);

export const ConfigSchema = z.object({
  HEADER_PREFIX: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9]{0,19}$/, "must be 1-20 letters or digits, starting with a letter")
    .default("SVC"),
  VAULT_MASTER_KEY: z
    .string({ error: "is required (32 random bytes, base64)" })
    .refine((value) => decodedLength(value) === 32, "must be 32 random bytes encoded as base64"),
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
  /** Only benchmarks turn auditing off, to measure what it costs (README "Audit log"). */
  AUDIT_LOG: flag("true"),
  /** A webhook is disabled after this many deliveries failed in a row. */
  WEBHOOK_FAILURE_LIMIT: positiveInteger(10),
  /** Seconds before a failed delivery's first retry; each further retry waits twice as long. */
  WEBHOOK_RETRY_BASE_S: z.coerce.number().int().min(0).max(3_600).default(30),
  CLOUDFLARE_ACCOUNT_ID: z.string().optional(),
  CLOUDFLARE_API_TOKEN: z.string().optional(),
  CLOUDFLARE_API_BASE: z.url().default("https://api.cloudflare.com/client/v4"),
  DISPATCH_NAMESPACE: z.string().optional(),
});

export type Config = z.infer<typeof ConfigSchema> & {
  /** Header names derived from HEADER_PREFIX, lower-cased as the Fetch API reports them. */
  headers: {
    apiKey: string;
    proxyKey: string;
    proxyUrl: string;
    traceId: string;
    idempotencyKey: string;
    operatorKey: string;
    consistencyBookmark: string;
  };
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
  const config: Config = {
    ...result.data,
    headers: {
      apiKey: `${prefix}-api-key`,
      proxyKey: `${prefix}-proxy-key`,
      proxyUrl: `${prefix}-proxy-url`,
      traceId: `${prefix}-trace-id`,
      idempotencyKey: `${prefix}-idempotency-key`,
      operatorKey: `${prefix}-operator-key`,
      consistencyBookmark: `${prefix}-consistency-bookmark`,
    },
    proxyKeyParam: `${prefix}-proxy-key`,
  };
  parsed.set(env, config);
  return config;
}
