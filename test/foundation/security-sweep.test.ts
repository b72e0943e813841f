import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { APPLE_PAY_TOKEN_PERMISSIONS, DOCUMENT_PERMISSIONS, GOOGLE_PAY_RESOURCE_PERMISSIONS } from "../../src/auth/permissions";
import { OWN_ORIGIN, signIn } from "../support/console";
import { dataDatabaseOf } from "../support/context";
import { expectDocumentedReply } from "../support/documented-replies";
import { CRYPTOGRAM_3DS, paymentMessage, sealEcV2 } from "../support/google-pay";
import { BASE, call, createApplication, type Reply, seedTenant, type Tenant } from "../support/harness";
import { type DocumentedOperation, documentedOperations } from "../support/openapi";
import { createProxy } from "../support/proxies";
import { createFormula, createReactor, reactAsync } from "../support/reactors";
import { readReply } from "../support/reply.mjs";
import { createIntent, INTENT_PERMISSIONS } from "../support/token-intents";
import { createToken, seedTokenTenant, type TokenTenant } from "../support/tokens";
import { createWebhook, receiver } from "../support/webhooks";
import { createApplePayToken } from "../wallets/apple-pay-merchant";
import { GALA_PKCS12_BASE64 } from "../wallets/apple-pay-vector";
import { MERCHANT_PRIVATE_KEY_PKCS8_BASE64 } from "../wallets/tink-ecv2-vectors";

/*
 * One security sweep over every operation of the served OpenAPI document: without a key the answer
 * is 401; with a key whose application holds no permission it is 403 (except the few routes any
 * valid key may call); and another tenant's id is a 404 that changes nothing. Proxy invocation
 * (`/proxy`) is selected by its proxy key, so there another tenant's API key is a 401. Every reply
 * must also be one the document declares, so an operation that does not document its 401, 403 or
 * 404 fails here too. A new route is swept as soon as it is in the document; a new kind of path id
 * needs an owner below, or this test fails.
 */

type Operation = DocumentedOperation;

/**
 * A valid body per route that takes one under an id, so that the 404 is not hidden behind a 400:
 * a new such route needs its body here.
 */
const VALID_BODIES: Record<string, unknown> = {
  "PUT /applications/{id}": { name: "renamed", permissions: ["token:read"] },
  "PATCH /tokens/{id}": { metadata: { a: "b" } },
  "PUT /proxies/{id}": { name: "renamed", destination_url: "https://example.com/" },
  "PATCH /proxies/{id}": { name: "renamed" },
  "POST /proxies/{id}/key": {},
  "PUT /reactor-formulas/{id}": {
    name: "renamed",
    type: "private",
    code: "module.exports = async () => ({});",
    configuration: [],
    request_parameters: [],
  },
  "PUT /reactors/{id}": { name: "renamed", configuration: {} },
  "PATCH /reactors/{id}": { name: "renamed" },
  "POST /reactors/{id}/react": { args: {} },
  "POST /reactors/{id}/react-async": { args: {} },
  "POST /applications/{id}/keys": {},
  "POST /applications/{id}/regenerate": {},
  "PUT /webhooks/{id}": { name: "renamed", url: "https://example.com/hook", events: ["token.created"] },
  "POST /google-pay/merchant-registration/{merchant_id}/certificates": { merchant_certificate_data: MERCHANT_PRIVATE_KEY_PKCS8_BASE64 },
  "POST /apple-pay/merchant-registration/{merchantId}/certificates": {
    payment_processor_certificate_data: GALA_PKCS12_BASE64,
    payment_processor_certificate_password: "s3cret",
  },
};

/** Routes that need a key of one application type rather than a permission: the 403 names the type. */
const KEY_OF_TYPE = new Map([["POST /sessions", /requires a public application's key/]]);

/** Routes every valid key may call: they only show the caller what it already is or may hold. */
const ANY_VALID_KEY = new Set(["GET /applications/key", "GET /permissions"]);

/** Routes that need no key at all: they tell only that the vault answers, and read no key they are sent. */
const NO_KEY = new Set(["GET /ping"]);

/**
 * The console's session routes: sign-in reads its key from the body, the others only the session's
 * cookie. They are swept by tests of their own below; every other route is swept with a console
 * session's cookie as well as with a key.
 */
const isConsoleSession = (operation: Operation) => operation.path === "/console/session";

let operations: Operation[] = [];
let owner: TokenTenant;
let intruder: Tenant;
let intruderKeys: string[];
let powerless: string;
let ownerPowerless: string;
/** The intruder's console sessions (one per key of intruderKeys) and the powerless key's, as cookies. */
let intruderCookies: string[];
let powerlessCookie: string;
let proxyKey: string;
/** The owner's key that holds every documents permission: the document the intruder tried to delete is still there. */
let documentReader: string;
/** The owner's key that reads its google-pay resource: the one the intruder tried to delete is still there. */
let googlePayReader: string;
/** The owner's key that reads its intents: the intent the intruder tried to delete is still there. */
let intentReader: string;
/** The owner's key that reads its Apple Pay tokens: the token the intruder tried to delete is still there. */
let applePayReader: string;
/** Ids that belong to `owner`, by the name of the path parameter and the collection it follows. */
let ownerIds: Record<string, string>;

beforeAll(async () => {
  operations = await documentedOperations();

  owner = await seedTokenTenant();
  const token = await createToken(owner.key, { type: "token", data: "owned" });
  // A second token and webhook: the owner's cursor lists then have a page after the first.
  await createToken(owner.key, { type: "token", data: "owned too" });
  const intentCreator = await createApplication(owner, { type: "private", permissions: ["token-intent:create"] });
  const intent = await createIntent(intentCreator.key, { type: "token", data: "intended" });
  const application = await createApplication(owner, { type: "private", permissions: ["token:read"] });
  const keys = await call("GET", `/applications/${application.id}/keys`, { key: owner.managementKey });
  const proxy = await createProxy(owner);
  const formula = await createFormula(owner);
  const reactor = await createReactor(owner, formula.id);
  const reaction = await reactAsync(owner.key, reactor.id, {});
  expect(reaction.status, JSON.stringify(reaction.body)).toBe(202);
  // The loopback receiver: the owner's token events are delivered there, never to the network.
  const webhook = await createWebhook(owner, { url: receiver().url });
  const clientKey = await call("POST", "/keys", { key: owner.managementKey, body: {} });
  expect(clientKey.status, JSON.stringify(clientKey.body)).toBe(201);
  await createWebhook(owner, { url: receiver().url });
  const merchant = await call("POST", "/google-pay/merchant-registration", {
    key: owner.managementKey,
    body: { merchant_identifier: "owned" },
  });
  expect(merchant.status, JSON.stringify(merchant.body)).toBe(201);
  const merchantKey = await call("POST", `/google-pay/merchant-registration/${merchant.body.id}/certificates`, {
    key: owner.managementKey,
    body: { merchant_certificate_data: MERCHANT_PRIVATE_KEY_PKCS8_BASE64 },
  });
  expect(merchantKey.status, JSON.stringify(merchantKey.body)).toBe(201);
  googlePayReader = (
    await createApplication(owner, { type: "private", permissions: ["google-pay:create", ...GOOGLE_PAY_RESOURCE_PERMISSIONS] })
  ).key;
  const googlePay = await call("POST", "/google-pay", {
    key: googlePayReader,
    body: { google_payment_data: sealEcV2(paymentMessage(CRYPTOGRAM_3DS), { recipientId: "merchant:owned" }) },
  });
  expect(googlePay.status, JSON.stringify(googlePay.body)).toBe(201);
  const appleMerchant = await call("POST", "/apple-pay/merchant-registration", { key: owner.managementKey, body: {} });
  const certificates = await call("POST", `/apple-pay/merchant-registration/${appleMerchant.body.id}/certificates`, {
    key: owner.managementKey,
    body: VALID_BODIES["POST /apple-pay/merchant-registration/{merchantId}/certificates"],
  });
  expect(certificates.status, JSON.stringify(certificates.body)).toBe(201);
  const applePay = await createApplePayToken(owner, ["apple-pay:read"]);
  applePayReader = applePay.key;
  documentReader = (await createApplication(owner, { type: "private", permissions: [...DOCUMENT_PERMISSIONS] })).key;
  const form = new FormData();
  form.append("document", new Blob(["owned document"]));
  const document = await SELF.fetch(`${BASE}/documents`, { method: "POST", headers: { "SVC-API-KEY": documentReader }, body: form });
  expect(document.status).toBe(201);
  proxyKey = proxy.key;
  ownerPowerless = (await createApplication(owner, { type: "private", permissions: [] })).key;
  ownerIds = {
    tokens: token.id,
    "token-intents": intent.id,
    applications: application.id,
    keys: keys.body[0].id,
    proxies: proxy.id,
    "reactor-formulas": formula.id,
    reactors: reactor.id,
    requests: reaction.body.asyncReactorRequestId,
    webhooks: webhook.id,
    "client-keys": clientKey.body.id,
    // The wallets' ids are looked up under the wallet first (ownedPath): "google-pay/certificates".
    // Google Pay: a merchant registration is {id} after merchant-registration and {merchant_id} before its certificates.
    "google-pay/merchant-registration": merchant.body.id,
    "google-pay/merchants": merchant.body.id,
    "google-pay/certificates": merchantKey.body.id,
    // Apple Pay: {id} after merchant-registration, {merchantId} before its certificates.
    "apple-pay/merchant-registration": appleMerchant.body.id,
    "apple-pay/merchantId": appleMerchant.body.id,
    "apple-pay/certificates": certificates.body.id,
    // An Apple Pay token: /apple-pay/{id}.
    "apple-pay/apple-pay": applePay.token.id,
    // A google-pay resource (a CRYPTOGRAM_3DS card): /google-pay/{id}.
    "google-pay": googlePay.body.google_pay.id,
    documents: ((await document.json()) as { id: string }).id,
    proxy: "charges",
    tenants: owner.tenantId,
  };

  intruder = await seedTenant();
  const intruderTokens = await createApplication(intruder, {
    type: "private",
    permissions: [
      "token:create",
      "token:read",
      "token:update",
      "token:delete",
      "token:search",
      "token:use",
      ...INTENT_PERMISSIONS,
      ...DOCUMENT_PERMISSIONS,
      ...APPLE_PAY_TOKEN_PERMISSIONS,
      ...GOOGLE_PAY_RESOURCE_PERMISSIONS,
    ],
  });
  intruderKeys = [intruder.managementKey, intruderTokens.key];
  powerless = (await createApplication(intruder, { type: "private", permissions: [] })).key;
  intentReader = (await createApplication(owner, { type: "private", permissions: ["token-intent:read"] })).key;
  intruderCookies = await Promise.all(intruderKeys.map(async (key) => (await signIn(key)).cookie));
  powerlessCookie = (await signIn(powerless)).cookie;
});

/** The path with each parameter replaced by the owner's id of the collection it follows. */
function ownedPath(path: string): string {
  const segments = path.split("/");
  return segments
    .map((segment, index) => {
      if (!segment.startsWith("{")) return segment;
      const collection = path.startsWith("/keys/") // client encryption keys; an application's keys are /applications/{id}/keys/{key_id}
        ? "client-keys"
        : segment === "{id}" || segment === "{path}"
          ? segments[index - 1]!
          : segment.slice(1, -1).replace(/_id$/, "s");
      const id = ownerIds[`${segments[1]}/${collection}`] ?? ownerIds[collection];
      if (!id) throw new Error(`the sweep has no owned id for ${segment} in ${path}: add one in beforeAll`);
      return encodeURIComponent(id);
    })
    .join("/");
}

async function send(operation: Operation, path: string, headers: Record<string, string>, json: unknown = {}): Promise<Reply> {
  const body = operation.bodyType ? JSON.stringify(json) : undefined;
  const response = await SELF.fetch(`${BASE}${path}`, {
    method: operation.method,
    headers: { ...headers, ...(operation.bodyType ? { "content-type": operation.bodyType } : {}) },
    body,
  });
  const reply = await readReply(response);
  expectDocumentedReply(operation.method, path, reply);
  return reply;
}

const name = (operation: Operation) => `${operation.method} ${operation.path}`;
const invokesProxy = (operation: Operation) => operation.path === "/proxy" || operation.path.startsWith("/proxy/");
/** The proxy key of the owner's proxy, for invocations; nothing for other routes. */
const proxyKeyFor = (operation: Operation): Record<string, string> => (invokesProxy(operation) ? { "SVC-PROXY-KEY": proxyKey } : {});

describe("security sweep over every route of the OpenAPI document", () => {
  it("finds the routes", () => {
    expect(operations.length).toBeGreaterThan(30);
  });

  it("answers 401 without a key", async () => {
    for (const operation of operations.filter((candidate) => !NO_KEY.has(name(candidate)) && !isConsoleSession(candidate))) {
      const reply = await send(operation, ownedPath(operation.path), {});
      expect(reply.status, name(operation)).toBe(401);
      expect(reply.body.detail ?? reply.body.proxy_error?.detail, name(operation)).toMatch(/SVC-(API|OPERATOR|PROXY)-KEY/);
      if (invokesProxy(operation)) {
        const withProxyKey = await send(operation, ownedPath(operation.path), proxyKeyFor(operation));
        expect(withProxyKey.status, `${name(operation)} with its proxy key`).toBe(401);
        expect(withProxyKey.body.proxy_error.detail).toMatch(/SVC-API-KEY/);
      }
    }
  });

  it("answers 403 naming the permission to a key whose application holds none, and to its console session", async () => {
    for (const operation of operations.filter(
      (candidate) =>
        !candidate.operator && !ANY_VALID_KEY.has(name(candidate)) && !NO_KEY.has(name(candidate)) && !isConsoleSession(candidate),
    )) {
      const key = invokesProxy(operation) ? ownerPowerless : powerless;
      const reply = await send(operation, ownedPath(operation.path), { "SVC-API-KEY": key, ...proxyKeyFor(operation) });
      expect(reply.status, name(operation)).toBe(403);
      const refusal = KEY_OF_TYPE.get(name(operation)) ?? /requires the permission [a-z-]+:[a-z]+/;
      expect(reply.body.detail ?? reply.body.proxy_error?.detail, name(operation)).toMatch(refusal);
      if (invokesProxy(operation)) continue;
      const byCookie = await send(operation, ownedPath(operation.path), { cookie: powerlessCookie, origin: OWN_ORIGIN });
      expect(byCookie.status, `${name(operation)} by cookie`).toBe(403);
      expect(byCookie.body.detail, `${name(operation)} by cookie`).toMatch(refusal);
    }
  }, 30_000);

  it("answers 401 on the console's session routes without a session, and to an unknown key", async () => {
    const consoleOperations = operations.filter(isConsoleSession);
    expect(consoleOperations.map(name).sort()).toEqual(["DELETE /console/session", "GET /console/session", "POST /console/session"]);
    for (const operation of consoleOperations) {
      const reply = await send(operation, operation.path, { origin: OWN_ORIGIN }, { api_key: "key_unknown" });
      expect(reply.status, name(operation)).toBe(401);
      const unknownCookie = await send(
        operation,
        operation.path,
        { origin: OWN_ORIGIN, cookie: "__Host-svc_console=console_unknown" },
        { api_key: "" },
      );
      expect(unknownCookie.status, name(operation)).toBe(operation.method === "POST" ? 400 : 401);
    }
  });

  it("lets any valid key call the routes that need no permission", async () => {
    for (const route of ANY_VALID_KEY) {
      const [method, path] = route.split(" ") as [string, string];
      const operation = operations.find((candidate) => name(candidate) === route);
      expect(operation, route).toBeDefined();
      const reply = await send(operation!, path, { "SVC-API-KEY": powerless });
      expect(reply.status, `${method} ${path}`).toBe(200);
    }
  });

  it("answers the routes that need no key the same with or without one, naming no tenant", async () => {
    for (const route of NO_KEY) {
      const operation = operations.find((candidate) => name(candidate) === route);
      expect(operation, route).toBeDefined();
      const path = route.split(" ")[1]!;
      const replies = await Promise.all(
        ([{}, { "SVC-API-KEY": owner.key }, { "SVC-API-KEY": "key_unknown" }] as Record<string, string>[]).map((headers) =>
          send(operation!, path, headers),
        ),
      );
      expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200]);
      expect(new Set(replies.map((reply) => reply.text)).size, route).toBe(1);
      expect(replies[0]!.text).not.toContain(owner.tenantId);
    }
  });

  // Four requests per route with an id: the 5 s default is too short on a loaded machine. Alone this takes ~10 s; after the
  // tests above, on two cores at load 8, 53 s on main before the Apple Pay token routes, and past 60 s with them.
  it("answers 404 to another tenant (by key or console session) for every route with an id, and changes nothing", async () => {
    const ownersData = await dataDatabaseOf(owner.tenantId);
    const owned = () =>
      ownersData
        .prepare(
          "SELECT count(*) AS n, max(modified_at) AS m, (SELECT count(*) FROM token_intents WHERE tenant_id = ?1) AS intents FROM tokens WHERE tenant_id = ?1",
        )
        .bind(owner.tenantId)
        .first();
    const before = await owned();
    // Operators act on any tenant by design: their routes are not tenant-scoped.
    const withIds = operations.filter((operation) => operation.path.includes("{") && !invokesProxy(operation) && !operation.operator);
    expect(withIds.length).toBeGreaterThan(10);
    for (const operation of withIds) {
      const body = operation.bodyType ? VALID_BODIES[name(operation)] : undefined;
      if (operation.bodyType && body === undefined) {
        throw new Error(`the sweep has no valid body for ${name(operation)}: add one to VALID_BODIES`);
      }
      const replies = await Promise.all([
        ...intruderKeys.map((key) => send(operation, ownedPath(operation.path), { "SVC-API-KEY": key }, body ?? {})),
        ...intruderCookies.map((cookie) => send(operation, ownedPath(operation.path), { cookie, origin: OWN_ORIGIN }, body ?? {})),
      ]);
      // Each route is reached by at least one of the intruder's keys (the other may lack the permission).
      const reached = replies.filter((reply) => reply.status !== 403);
      expect(reached.length, name(operation)).toBeGreaterThan(0);
      for (const reply of reached) {
        expect(reply.status, `${name(operation)}: ${JSON.stringify(reply.body)}`).toBe(404);
      }
    }
    expect(await owned()).toEqual(before);
    const stillThere = await call("GET", `/tokens/${ownerIds.tokens}`, { key: owner.key });
    expect(stillThere.status).toBe(200);
    expect((await call("GET", `/token-intents/${ownerIds["token-intents"]}`, { key: intentReader })).status).toBe(200);
    expect((await call("GET", `/keys/${ownerIds["client-keys"]}`, { key: owner.managementKey })).status).toBe(200);
    const ownersMerchantKey = `/google-pay/merchant-registration/${ownerIds["google-pay/merchants"]}/certificates/${ownerIds["google-pay/certificates"]}`;
    expect((await call("GET", ownersMerchantKey, { key: owner.managementKey })).status).toBe(200);
    const ownersCertificates = `/apple-pay/merchant-registration/${ownerIds["apple-pay/merchantId"]}/certificates/${ownerIds["apple-pay/certificates"]}`;
    expect((await call("GET", ownersCertificates, { key: owner.managementKey })).status).toBe(200);
    expect((await call("GET", `/documents/${ownerIds.documents}/data`, { key: documentReader })).status).toBe(200);
    expect((await call("GET", `/apple-pay/${ownerIds["apple-pay/apple-pay"]}`, { key: applePayReader })).status).toBe(200);
    expect((await call("GET", `/google-pay/${ownerIds["google-pay"]}`, { key: googlePayReader })).status).toBe(200);
  }, 120_000);

  it("answers 400 naming start to another tenant's cursor on every cursor-paged route, and shows nothing of the owner's", async () => {
    const paged = operations.filter((operation) => operation.queryNames.includes("start") || operation.bodyMembers.includes("start"));
    expect(paged.length).toBeGreaterThanOrEqual(3);
    const page = (operation: Operation, key: string, start?: string) => {
      const query = operation.queryNames.includes("start") ? `?size=1${start ? `&start=${start}` : ""}` : "";
      return send(operation, `${operation.path}${query}`, { "SVC-API-KEY": key }, { size: 1, ...(start ? { start } : {}) });
    };
    for (const operation of paged) {
      // The owner's key that may call the route, and the cursor after its first item.
      const firstPages = await Promise.all([owner.key, owner.managementKey].map((key) => page(operation, key)));
      const next = firstPages.find((reply) => reply.status === 200)?.body.pagination.next;
      expect(next, name(operation)).toEqual(expect.any(String));
      const replies = await Promise.all(intruderKeys.map((key) => page(operation, key, next)));
      const reached = replies.filter((reply) => reply.status !== 403);
      expect(reached.length, name(operation)).toBeGreaterThan(0);
      for (const reply of reached) {
        expect(reply.status, `${name(operation)}: ${reply.text}`).toBe(400);
        expect(reply.body.errors, name(operation)).toHaveProperty("start");
      }
    }
  }, 30_000);

  it("answers 401 to another tenant's key on a proxy invocation", async () => {
    for (const operation of operations.filter(invokesProxy)) {
      const reply = await send(operation, ownedPath(operation.path), { "SVC-API-KEY": intruderKeys[1]!, ...proxyKeyFor(operation) });
      expect(reply.status, name(operation)).toBe(401);
      expect(reply.body.proxy_error.detail).toContain("not valid for this proxy");
    }
  });
});
