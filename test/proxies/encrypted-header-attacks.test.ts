import { beforeAll, describe, expect, it } from "vitest";
import { call, createApplication } from "../support/harness";
import { encryptJwe } from "../support/jwe";
import { destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

/*
 * Attacks on `SVC-ENCRYPTED` the feature's own tests do not make: a JWE taken to another tenant, and a
 * JWE of one type's data sent under another type whose container the caller may reveal.
 */

const CARD = { number: VISA, expiration_month: 12, expiration_year: 2099 };
const base64 = (value: unknown) => btoa(JSON.stringify(value));

let tenant: TokenTenant;
let clientKey: { id: string; public_key_pem: string };

async function newClientKey(managementKey: string) {
  const reply = await call("POST", "/keys", { key: managementKey, body: {} });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string; public_key_pem: string };
}

function send(header: string, body: unknown, apiKey: string, path: string) {
  return invoke("POST", path, { apiKey, body, headers: { "SVC-PROXY-URL": loopback(), "SVC-ENCRYPTED": header } });
}

beforeAll(async () => {
  tenant = await seedTokenTenant();
  clientKey = await newClientKey(tenant.managementKey);
});

describe("SVC-ENCRYPTED under attack", () => {
  it("a JWE to another tenant's key is refused as a JWE to no key at all: no oracle of the other tenant's keys", async () => {
    const other = await seedTokenTenant();
    const theirs = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(CARD));
    const unknown = await encryptJwe(clientKey.public_key_pem, crypto.randomUUID(), JSON.stringify(CARD));
    const body = { n: '{{ encrypted | json: "$.data.number" }}' };
    const refusals = [];
    for (const jwe of [theirs, unknown]) {
      const reply = await send(base64({ type: "card", encrypted: jwe }), body, other.key, "/other-tenant");
      refusals.push(expectProxyError(reply, 400).errors);
      expect(reply.text).not.toContain(VISA);
    }
    expect(refusals[0]).toEqual(refusals[1]);
    expect(await destinationSaw("other-tenant")).toBe(0);
  });

  it("card data encrypted by a browser cannot be decrypted under type token by a caller that may reveal only /general/", async () => {
    const general = await createApplication(tenant, {
      type: "private",
      permissions: [],
      rules: [{ description: "use", priority: 1, container: "/general/", transform: "reveal", permissions: ["token:use"] }],
    });
    // The card as a card token's data, a bare number (string or JSON number), and a number nested in a shape of the client's own.
    for (const data of [CARD, VISA, Number(VISA), { wallet: [{ pan: VISA }] }]) {
      const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(data));
      const reply = await send(base64({ type: "token", encrypted: jwe }), { n: "{{ encrypted }}" }, general.key, "/relabelled");
      expect(reply.text, JSON.stringify(data)).not.toContain(VISA);
      expect(expectProxyError(reply, 403).detail).toContain("/pci/high/");
    }
    expect(await destinationSaw("relabelled")).toBe(0);
    // Data that holds no card number is the caller's to use under type token, as before.
    const note = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify({ note: "4242", id: 12345 }));
    const reply = await send(
      base64({ type: "token", encrypted: note }),
      { n: '{{ encrypted | json: "$.data.note" }}' },
      general.key,
      "/note",
    );
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ n: "4242" });
  });

  it("a caller that may reveal cards uses card data sent under another type", async () => {
    const both = await createApplication(tenant, {
      type: "private",
      permissions: [],
      rules: [{ description: "use", priority: 1, container: "/", transform: "reveal", permissions: ["token:use"] }],
    });
    const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(CARD));
    const reply = await send(
      base64({ type: "token", encrypted: jwe }),
      { n: '{{ encrypted | json: "$.data.number" }}' },
      both.key,
      "/both",
    );
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ n: VISA });
  });
});
