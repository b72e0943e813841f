/**
 * Every limit a client can run into, in one place, by area. the Limits table of docs/api.md lists the
 * same values; test/foundation/limits.test.ts holds the two together. Tuning values that no client
 * sees (cache sizes, purge chunks) stay next to the code they tune.
 */

const KiB = 1024;
const MiB = 1024 * KiB;

/** Request bodies: the API's and /proxy's. */
export const BODY = {
  /** Largest body the API, /proxy and a `bt` argument accept (413 over it). */
  maxBytes: 1 * MiB,
  /** Deepest nesting of arrays and objects in any JSON the vault reads or writes. */
  maxJsonDepth: 32,
} as const;

/** Names of applications, proxies, reactors and formulas; configuration entries' names. */
export const NAME_MAX_LENGTH = 200;

/** Items per page of every list and search. */
export const PAGE_MAX_SIZE = 100;

/**
 * Longest `start` a cursor-paged list accepts (400 beyond, before anything is decoded): a cursor
 * that holds a token id of 400 characters is under 1,700.
 */
export const CURSOR_MAX_LENGTH = 4096;

export const TOKENS = {
  idMinLength: 3,
  idMaxLength: 400,
  maxContainers: 20,
  containerMaxLength: 200,
  maxSearchIndexes: 20,
  maxMetadataEntries: 100,
  metadataKeyMaxLength: 200,
  metadataValueMaxLength: 1000,
  expressionMaxLength: 1000,
  maskMaxLength: 10_000,
  /** Create requests and leaves in one tokenize call. */
  maxPerTokenize: 100,
  /** Distinct token references in one detokenized body (proxy, react, `bt`, bulk detokenize). */
  maxReferences: 100,
  /**
   * Characters the values put in one detokenized body may add up to (a value used twice counts
   * twice): 100 references to one token of a 1 MB body's data would otherwise make a body of 100 MB
   * from one of a few KB, held several times over in an isolate of 128 MB.
   */
  maxDetokenizedCharacters: 10 * MiB,
  jsonPathMaxLength: 1000,
  padMaxLength: 1000,
  cardExpFormatMaxLength: 20,
} as const;

/**
 * Every evaluation of a Liquid expression (a mask with all its leaves, a fingerprint, one search
 * index, an alias id, one detokenization expression): expressions hold no tags, so their work is
 * the filters they call and the output they write.
 */
export const EXPRESSIONS = {
  /** Filter calls in one evaluation; an expression with more filters than this is refused when parsed. */
  maxFilterCalls: 32,
  /** Output one evaluation may write: this many characters, plus the next figure per character of its input. */
  outputBaseCharacters: 1024,
  outputPerInputCharacter: 4,
  /**
   * What the filters of all the evaluations of one token (its fingerprint, search indexes, mask and
   * alias id), or of one request's detokenization, may read and allocate together: this many
   * characters, plus the next figure per character of the data.
   */
  workBaseCharacters: 100_000,
  workPerInputCharacter: 2,
} as const;

export const SEARCH = {
  queryMaxCharacters: 4096,
  queryMaxTerms: 100,
  queryMaxDepth: 20,
  maxPage: 1_000_000,
  /** `total_items` counts at most this many matches past the start of the page. */
  countHorizon: 10_000,
} as const;

export const APPLICATIONS = {
  maxRules: 100,
  maxKeys: 20,
  /** Origins a public application's frames may be embedded in and its key called from. */
  maxAllowedOrigins: 20,
  allowedOriginMaxLength: 300,
} as const;

/** Sessions (POST /sessions, POST /sessions/authorize). */
export const SESSIONS = {
  /**
   * A session's lifetime unless its authorization sets another: one minute. The original interface's is 3 minutes;
   * create → authorize → retrieve takes well under a second (test/elements/reveal.test.ts measures it), and a shorter
   * window is less time for a nonce that page script hands the merchant's server (docs/decisions.md).
   */
  defaultLifetimeMs: 60_000,
  /** The latest an authorization may set `expires_at`: a day after the session was created (and never past the authorizing key's expiry). */
  maxLifetimeMs: 24 * 60 * 60_000,
} as const;

/** Token intents (POST /token-intents): data held for a while before a private key converts it into a token. */
export const TOKEN_INTENTS = {
  /** How long an intent lives: a day, the original interface's default. The cron deletes it after. */
  lifetimeMs: 24 * 60 * 60_000,
  /**
   * An intent's data as JSON. A public key creates intents from every shopper's browser, and the vault keeps
   * each for a day: a form's worth of data, not a body's 1 MiB.
   */
  maxDataBytes: 32 * KiB,
} as const;

/** Longest API key or proxy key the vault will look up. */
export const SECRET_MAX_LENGTH = 256;

export const PROXIES = {
  destinationUrlMaxLength: 400,
  maxConfigurationEntries: 100,
  configurationValueMaxLength: 10_000,
  /** Token requests one `{P}-ENCRYPTED` header may hold: each is a key agreement and a decryption. */
  maxEncryptedRequests: 20,
} as const;

export const REACTORS = {
  /** Elements of a formula's configuration or request-parameters contract. */
  maxContractElements: 100,
  iconMaxBytes: 64 * KiB,
  descriptionMaxLength: 2000,
  /** The configuration of a reactor with its own code (no contract bounds it): entries, and characters of each value. */
  maxConfigurationEntries: 100,
  configurationValueMaxLength: 10_000,
  /**
   * How long an async reaction's result is kept for GET /reactors/{id}/results/{request_id}: a day,
   * as the original interface keeps idempotent results and logs (a result holding a card's cvc goes
   * at the cvc's deadline, if that is sooner).
   */
  asyncResultRetentionMs: 24 * 60 * 60 * 1000,
  /** Async reactions of one tenant waiting or running at once (429 over it). */
  maxOpenAsyncReactions: 100,
  /** Largest result an async reaction may keep, as JSON (a larger one is kept as a failure saying so). */
  asyncResultMaxBytes: 1 * MiB,
} as const;

/** Tenant code (transforms and reactor formulas); CPU and wall time are settings. */
export const SANDBOX = {
  codeMaxLength: 50_000,
  /** Args and configuration of one run, as JSON. */
  inputMaxBytes: 1 * MiB,
  subrequests: 50,
  /** One allocation inside tenant code (production isolates have 128 MB in all). */
  allocationMaxBytes: 128 * MiB,
  errorMessageMaxLength: 2000,
  /** The name of an error tenant code threw, the only part of an untyped error the vault repeats. */
  errorNameMaxLength: 50,
} as const;

/** How long an idempotency key's response is replayed. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * How long a request's claim of its idempotency key holds without an answer before a retry may take
 * it over, unless the deployment sets IDEMPOTENCY_LEASE_MS (src/env.ts): longer than an idempotent
 * request waits on anything (tenant code's default wall time, 30 s; a proxy's timeout, 25 s; one D1
 * query, at most 30 s), so a live request keeps its claim.
 */
export const IDEMPOTENCY_LEASE_MS = 60_000;

export const AUDIT = {
  /** Entries one `GET /logs/verify` checks; a longer range is verified in several calls. */
  verifyMaxEntries: 20_000,
  /** The most recent errors GET /logs/summary lists, and the busiest proxies and reactors it names of each. */
  summaryRecentErrors: 20,
  summaryBusiest: 10,
} as const;

export const WEBHOOKS = {
  /** Webhooks one tenant may hold, as the original interface documents. */
  maxPerTenant: 5,
  urlMaxLength: 400,
  /** How long a delivery waits for the receiver's answer. */
  deliveryTimeoutMs: 10_000,
  /** Deliveries a webhook keeps for GET /webhooks/{id}/deliveries, newest first; older ones are pruned. */
  deliveriesKept: 100,
} as const;

export const CLIENT_KEYS = {
  /** Client encryption keys one tenant may hold, expired ones included: each is a row and a sealed private key. */
  maxPerTenant: 100,
} as const;

/** Console sessions (src/console/; docs/decisions.md, "Console sessions"). */
export const CONSOLE_SESSIONS = {
  /** A session unused this long ends. */
  idleLifetimeMs: 30 * 60_000,
  /** A session ends this long after sign-in, however much it is used. */
  absoluteLifetimeMs: 12 * 3_600_000,
  /** Renewal is written at most this often: a console polling every second costs one write a minute. */
  renewEveryMs: 60_000,
  /** Live sessions of one application: a sign-in beyond them ends its oldest (the control database is every tenant's). */
  maxPerApplication: 20,
};

/** Google Pay (src/google-pay/; docs/api.md, "Google Pay"). */
export const GOOGLE_PAY = {
  /** Merchant registrations one tenant may hold. */
  maxMerchantsPerTenant: 10,
  /** Private keys one merchant registration may hold: enough to overlap a key rotation. */
  maxKeysPerMerchant: 5,
  /** A token's `signedMessage`: a card's encrypted message is well under 2 KiB. */
  maxSignedMessageChars: 16 * KiB,
  /** A token's `intermediateSigningKey.signedKey`. */
  maxSignedKeyChars: 1 * KiB,
  /** Signatures over the intermediate key each token may carry; each is checked against every root key. */
  maxIntermediateSignatures: 4,
  /** A CRYPTOGRAM_3DS card's cryptogram (28 base64 characters from the networks); a longer one is refused. */
  maxCryptogramChars: 256,
  /** A message id kept in a resource's details; a longer one is left out. */
  maxMessageIdChars: 512,
} as const;

/** Apple Pay (src/apple-pay/; docs/decisions.md, "Apple Pay"). */
export const APPLE_PAY = {
  /** A token signed longer ago than this is refused: Apple's payment sheet hands it over at once. */
  signingWindowPastMs: 5 * 60_000,
  /** Nor one signed further ahead than this (clock skew between Apple and the vault). */
  signingWindowFutureMs: 60_000,
  /** Merchant registrations one tenant may hold. */
  maxMerchantsPerTenant: 20,
  /** Payment processing certificates one merchant registration may hold (old and new, while rotating). */
  maxCertificatesPerMerchant: 5,
  /** Longest `payment_processor_certificate_data` (base64 PEM of a certificate and its key), in characters. */
  maxCertificateDataLength: 16_384,
  /** Most iterations of a PKCS #12 file's key derivations (WebCrypto's PBKDF2 in Workers allows no more). */
  maxPkcs12Iterations: 100_000,
  /** Parts of a PKCS #12 file's authenticated safe (OpenSSL writes two): each encrypted one is a key derivation. */
  maxPkcs12Parts: 4,
  /** Bags in all of a PKCS #12 file's parts (the vault keeps one certificate and one key). */
  maxPkcs12Bags: 8,
  /** Certificates a token's signature may carry (Apple's carries its leaf and intermediate). */
  maxSignatureCertificates: 3,
  /** Longest `paymentData.data` and `paymentData.signature`, in base64 characters. */
  maxTokenFieldLength: 65_536,
} as const;

/** Documents (src/documents/, docs/documents.md). */
export const DOCUMENTS = {
  /** Largest document POST /documents stores (413 over it, nothing kept). */
  maxBytes: 25 * MiB,
  /** Largest `request` part (the metadata's JSON). */
  requestMaxBytes: 64 * KiB,
  /** Plaintext bytes per encrypted chunk; each is sealed on its own (AES-256-GCM). */
  chunkBytes: 64 * KiB,
} as const;

/** Apple Pay on the web: domain registrations and merchant sessions (src/apple-pay/domains.ts, session.ts, gateway.ts). */
export const APPLE_PAY_WEB = {
  /** Domains one tenant may register: Apple's own limit per merchant (`partnerInternalMerchantIdentifier`). */
  maxDomainsPerTenant: 99,
  /** Longest domain name (RFC 1035's 253 characters). */
  maxDomainLength: 253,
  /** Longest `display_name` of a merchant session, in characters (Apple's limit). */
  maxDisplayNameLength: 64,
  /** Longest `validation_url`, in characters. */
  maxValidationUrlLength: 2_048,
  /** How long the vault waits for Apple's answer, headers and body together. */
  gatewayTimeoutMs: 10_000,
  /** Largest answer the vault reads from Apple (a merchant session is about 2 KB); a longer one is a 502. */
  maxGatewayAnswerBytes: 65_536,
} as const;
