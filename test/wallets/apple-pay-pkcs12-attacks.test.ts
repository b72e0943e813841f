import { describe, expect, it } from "vitest";
import { APPLE_PAY } from "../../src/limits";
import { call, expectProblem, rowCounts, seedTenant, type Tenant } from "../support/harness";
import { withMacDigest, withNestedKey } from "./pkcs12-files";

/*
 * Attacks on the PKCS #12 reader's bounds (attack38c): file shapes pkcs12-files.ts builds from
 * gala's file, uploaded as a merchant's payment processing certificate.
 */

async function merchantOf(tenant: Tenant): Promise<string> {
  const body = { merchant_identifier: "merchant.test.spreedly.123merchant" };
  const reply = await call("POST", "/apple-pay/merchant-registration", { key: tenant.managementKey, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body.id;
}

const upload = (tenant: Tenant, merchantId: string, data: string) =>
  call("POST", `/apple-pay/merchant-registration/${merchantId}/certificates`, {
    key: tenant.managementKey,
    body: { payment_processor_certificate_data: data, payment_processor_certificate_password: "s3cret", domain: "shop.example.com" },
  });

describe("PKCS #12 shapes past the reader's bounds", () => {
  it("a key hidden in a bag of bags, of a PBKDF2 count no bound would pass, is never derived: a 400 for want of a key, nothing stored", async () => {
    const tenant = await seedTenant();
    const merchantId = await merchantOf(tenant);
    const before = await rowCounts();
    const problem = expectProblem(await upload(tenant, merchantId, await withNestedKey(40 * APPLE_PAY.maxPkcs12Iterations)), 400);
    expect(problem.errors?.payment_processor_certificate_data?.[0]).toMatch(/exactly one private key/);
    expect(await rowCounts()).toEqual(before);
  });

  it("a MAC naming a digest WebCrypto has not (MD5) or none at all is a 400, nothing stored", async () => {
    const tenant = await seedTenant();
    const merchantId = await merchantOf(tenant);
    const before = await rowCounts();
    for (const digest of ["1.2.840.113549.2.5", "1.2.3.4"]) {
      const problem = expectProblem(await upload(tenant, merchantId, await withMacDigest(digest)), 400);
      expect(problem.errors, digest).toHaveProperty("payment_processor_certificate_data");
    }
    expect(await rowCounts()).toEqual(before);
  });
});
