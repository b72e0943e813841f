import { beforeAll, describe, expect, it } from "vitest";
import { createApplication, type Tenant } from "../support/harness";
import { refusedQuery, searchIds, sorted } from "../support/search";
import { createToken, patchToken, REVEAL_EVERYTHING, SSN, seedTokenTenant, VISA } from "../support/tokens";

/** Rule 7: id, type, fingerprint, created_by, modified_by. */

let tenant: Tenant & { key: string; applicationId: string };
let other: { id: string; key: string };
let ssn: { id: string; fingerprint: string };
let sameSsn: { id: string };
let card: { id: string };
let byOther: { id: string };

beforeAll(async () => {
  tenant = await seedTokenTenant();
  other = await createApplication(tenant, REVEAL_EVERYTHING);
  ssn = await createToken(tenant.key, { type: "social_security_number", data: SSN });
  sameSsn = await createToken(tenant.key, { type: "social_security_number", data: SSN.replace(/-/g, "") });
  card = await createToken(tenant.key, { type: "card_number", data: VISA });
  byOther = await createToken(other.key, { type: "token", data: "made by the other application" });
});

describe("query syntax: exact fields", () => {
  it("id matches the token with that id, in any case", async () => {
    expect(await searchIds(tenant.key, `id:${card.id}`)).toEqual([card.id]);
    expect(await searchIds(tenant.key, `id:${card.id.toUpperCase()}`)).toEqual([card.id]);
    expect(await searchIds(tenant.key, `id:${crypto.randomUUID()}`)).toEqual([]);
  });

  it("type matches tokens of that type", async () => {
    expect(sorted(await searchIds(tenant.key, "type:social_security_number"))).toEqual(sorted([ssn.id, sameSsn.id]));
    expect(await searchIds(tenant.key, "type:card_number")).toEqual([card.id]);
  });

  it("a type that does not exist is a 400 that lists the types", async () => {
    const { message } = await refusedQuery(tenant.key, "type:Card_Number");
    expect(message).toMatch(/^column 6: unknown token type "Card_Number": the types are token, card_number, /);
  });

  it("fingerprint matches every token with that fingerprint", async () => {
    expect(sorted(await searchIds(tenant.key, `fingerprint:${ssn.fingerprint}`))).toEqual(sorted([ssn.id, sameSsn.id]));
  });

  it("created_by matches tokens created by that application, its id in any case", async () => {
    expect(await searchIds(tenant.key, `created_by:${other.id.toUpperCase()}`)).toEqual([byOther.id]);
    expect(sorted(await searchIds(tenant.key, `created_by:${tenant.applicationId}`))).toEqual(sorted([ssn.id, sameSsn.id, card.id]));
  });

  it("modified_by matches tokens last modified by that application", async () => {
    const reply = await patchToken(other.key, card.id, { metadata: { reviewed: "yes" } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(sorted(await searchIds(tenant.key, `modified_by:${other.id}`))).toEqual(sorted([byOther.id, card.id]));
    expect(await searchIds(tenant.key, `created_by:${other.id} AND modified_by:${other.id}`)).toEqual([byOther.id]);
  });
});
