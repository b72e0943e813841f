import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem } from "../support/harness";
import { createToken, SSN, seedTokenTenant, VISA } from "../support/tokens";

describe("token types", () => {
  it("an unknown type is a 400 naming the known types", async () => {
    const { key } = await seedTokenTenant();
    const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "passport", data: "X1" } }), 400);
    expect(problem.errors?.type?.[0]).toContain("must be one of token, card_number, social_security_number");
  });

  it("data is required", async () => {
    const { key } = await seedTokenTenant();
    const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "token" } }), 400);
    expect(problem.errors?.data).toEqual(["is required"]);
  });

  describe("token", () => {
    it("accepts any JSON value as data", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["text", 42, 1.5, true, false, [1, "a"], { nested: { value: [1, 2] } }]) {
        expect((await createToken(key, { type: "token", data })).data).toEqual(data);
      }
    });

    it("refuses null data", async () => {
      const { key } = await seedTokenTenant();
      const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "token", data: null } }), 400);
      expect(problem.errors?.data?.[0]).toContain("must not be null");
    });

    it("defaults to container /general/high/, fingerprint {{ data | stringify }}, no mask and no search indexes", async () => {
      const { key } = await seedTokenTenant();
      expect(await createToken(key, { type: "token", data: { a: 1 } })).toMatchObject({
        containers: ["/general/high/"],
        fingerprint_expression: "{{ data | stringify }}",
        mask: null,
        search_indexes: [],
      });
    });
  });

  describe("card_number", () => {
    it("accepts 13 to 19 digits that pass the Luhn check", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["4222222222222", VISA, "6011000990139424", "4000000000000000006"]) {
        expect((await createToken(key, { type: "card_number", data })).data).toBe(data);
      }
    });

    it("refuses a number that fails the Luhn check", async () => {
      const { key } = await seedTokenTenant();
      const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "card_number", data: "4242424242424241" } }), 400);
      expect(problem.errors?.data?.[0]).toContain("must pass the Luhn check");
    });

    it("refuses fewer than 13 or more than 19 digits, non-digits and non-strings", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["424242424242", "42424242424242424242", "4242 4242 4242 4242", 4242424242424242]) {
        const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "card_number", data } }), 400);
        expect(problem.errors?.data?.[0]).toContain("must be a string of 13 to 19 digits");
      }
    });

    it("defaults to container /pci/high/, fingerprint {{ data }}, a last-4 mask and no search indexes", async () => {
      const { key } = await seedTokenTenant();
      expect(await createToken(key, { type: "card_number", data: VISA })).toMatchObject({
        containers: ["/pci/high/"],
        fingerprint_expression: "{{ data }}",
        mask: "{{ data | reveal_last: 4 }}",
        search_indexes: [],
      });
    });
  });

  describe("social_security_number", () => {
    it("accepts 9 digits, plain or dashed as NNN-NN-NNNN", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["123456789", SSN]) expect((await createToken(key, { type: "social_security_number", data })).data).toBe(data);
    });

    it("refuses other lengths and other dash positions", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["12345678", "1234567890", "12-345-6789", "123-456789", "abc-de-fghi"]) {
        const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "social_security_number", data } }), 400);
        expect(problem.errors?.data?.[0]).toContain("must be 9 digits, optionally dashed as NNN-NN-NNNN");
      }
    });

    it("defaults to container /pii/high/, a dash-less fingerprint, a last-4 mask and three search indexes", async () => {
      const { key } = await seedTokenTenant();
      expect(await createToken(key, { type: "social_security_number", data: SSN })).toMatchObject({
        containers: ["/pii/high/"],
        fingerprint_expression: "{{ data | remove: '-' }}",
        mask: "{{ data | reveal_last: 4 }}",
        search_indexes: ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"],
      });
    });
  });

  describe("employer_id_number", () => {
    it("accepts 9 digits, plain or dashed as NN-NNNNNNN", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["123456789", "12-3456789"])
        expect((await createToken(key, { type: "employer_id_number", data })).data).toBe(data);
    });

    it("refuses other lengths and other dash positions", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["12345678", "123-45-6789", "1-23456789"]) {
        const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "employer_id_number", data } }), 400);
        expect(problem.errors?.data?.[0]).toContain("must be 9 digits, optionally dashed as NN-NNNNNNN");
      }
    });

    it("defaults to container /pii/high/, a dash-less fingerprint, a last-4 mask and three search indexes", async () => {
      const { key } = await seedTokenTenant();
      expect(await createToken(key, { type: "employer_id_number", data: "12-3456789" })).toMatchObject({
        containers: ["/pii/high/"],
        fingerprint_expression: "{{ data | remove: '-' }}",
        mask: "{{ data | reveal_last: 4 }}",
        search_indexes: ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"],
      });
    });
  });

  describe("us_bank_account_number", () => {
    it("accepts 3 to 17 digits", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["123", "12345678901234567"])
        expect((await createToken(key, { type: "us_bank_account_number", data })).data).toBe(data);
    });

    it("refuses fewer than 3 or more than 17 digits", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["12", "123456789012345678", "12a45"]) {
        const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "us_bank_account_number", data } }), 400);
        expect(problem.errors?.data?.[0]).toContain("must be a string of 3 to 17 digits");
      }
    });

    it("defaults to container /bank/high/, fingerprint {{ data }} and a last-4 mask", async () => {
      const { key } = await seedTokenTenant();
      expect(await createToken(key, { type: "us_bank_account_number", data: "000123456789" })).toMatchObject({
        containers: ["/bank/high/"],
        fingerprint_expression: "{{ data }}",
        mask: "{{ data | reveal_last: 4 }}",
        search_indexes: [],
      });
    });
  });

  describe("us_bank_routing_number", () => {
    it("accepts 9 digits that pass the ABA checksum", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["011000015", "021000021", "121000358"]) {
        expect((await createToken(key, { type: "us_bank_routing_number", data })).data).toBe(data);
      }
    });

    it("refuses a number that fails the ABA checksum", async () => {
      const { key } = await seedTokenTenant();
      const problem = expectProblem(
        await call("POST", "/tokens", { key, body: { type: "us_bank_routing_number", data: "011000016" } }),
        400,
      );
      expect(problem.errors?.data?.[0]).toContain("must pass the ABA routing number checksum");
    });

    it("refuses anything but 9 digits", async () => {
      const { key } = await seedTokenTenant();
      for (const data of ["01100001", "0110000150", "01100001a"]) {
        const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "us_bank_routing_number", data } }), 400);
        expect(problem.errors?.data?.[0]).toContain("must be a string of 9 digits");
      }
    });

    it("defaults to container /bank/low/, fingerprint {{ data }} and a last-4 mask", async () => {
      const { key } = await seedTokenTenant();
      expect(await createToken(key, { type: "us_bank_routing_number", data: "011000015" })).toMatchObject({
        containers: ["/bank/low/"],
        fingerprint_expression: "{{ data }}",
        mask: "{{ data | reveal_last: 4 }}",
        search_indexes: [],
      });
    });
  });

  it("the default mask shows only the last four characters", async () => {
    const tenant = await seedTokenTenant();
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:read"] });
    const token = await createToken(tenant.key, { type: "card_number", data: VISA });
    const read = await call("GET", `/tokens/${token.id}`, { key: reader.key });
    expect(read.body.data).toBe("XXXXXXXXXXXX4242");
  });

  it("the default masks give the original docs' examples, separators kept", async () => {
    const tenant = await seedTokenTenant();
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:read"] });
    const examples: [string, string, string][] = [
      ["card_number", "4242424242424242", "XXXXXXXXXXXX4242"],
      ["card_number", "36227206271667", "XXXXXXXXXX1667"],
      ["us_bank_account_number", "1234567890", "XXXXXX7890"],
      ["us_bank_routing_number", "011000015", "XXXXX0015"],
      ["social_security_number", "123456789", "XXXXX6789"],
      ["social_security_number", "123-45-6789", "XXX-XX-6789"],
      ["employer_id_number", "123456789", "XXXXX6789"],
      ["employer_id_number", "12-3456789", "XX-XXX6789"],
    ];
    for (const [type, data, masked] of examples) {
      const token = await createToken(reader.key, { type, data });
      expect([type, token.data]).toEqual([type, masked]);
    }
  });

  it("given containers replace the default, lower-cased and without duplicates", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "card_number", data: VISA, containers: ["/Cards/EU/", "/cards/eu/", "/audit/"] });
    expect(token.containers).toEqual(["/cards/eu/", "/audit/"]);
  });

  it("the response carries ids, audit fields and ISO 8601 UTC times", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "x", metadata: { Source: "Web" } });
    expect(token).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      type: "token",
      tenant_id: tenant.tenantId,
      fingerprint: expect.any(String),
      metadata: { Source: "Web" },
      expires_at: null,
      created_by: tenant.applicationId,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      modified_by: tenant.applicationId,
      _extras: { deduplicated: false },
    });
    expect(token.modified_at).toBe(token.created_at);
  });
});
