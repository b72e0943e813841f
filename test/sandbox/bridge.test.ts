import { beforeAll, describe, expect, it } from "vitest";
import type { Principal } from "../../src/auth/access";
import { principalForApplication } from "../../src/auth/service";
import { logEntries } from "../support/audit";
import { tenantContext } from "../support/context";
import { call, createApplication } from "../support/harness";
import { run, scriptOwner } from "../support/sandbox";
import { createToken, seedTokenTenant, type TokenTenant } from "../support/tokens";

async function principalOf(tenantId: string, applicationId: string): Promise<Principal> {
  const principal = await principalForApplication(await tenantContext(tenantId), applicationId);
  if (!principal) throw new Error("the application does not exist");
  return principal;
}

/** Runs `code` as a reactor of the tenant whose `bt` acts as the application. */
function runAs(tenant: TokenTenant, application: Principal, code: string, args: unknown = {}) {
  return run(code, { owner: scriptOwner("reactor", tenant.tenantId), application, args });
}

/** Tenant code that reports a failing bt call instead of failing itself. */
function reportingFailure(call: string): string {
  return `module.exports = async (req) => {
    try { return { raw: { value: await ${call} } }; }
    catch (error) { return { raw: { name: error.name, status: error.status, title: error.title, errors: error.errors ?? null } }; }
  };`;
}

describe("bt: the vault inside tenant code, as the owner's application", () => {
  let tenant: TokenTenant;
  let application: Principal;

  beforeAll(async () => {
    tenant = await seedTokenTenant();
    application = await principalOf(tenant.tenantId, tenant.applicationId);
  });

  it("bt.tokenize creates tokens as the application", async () => {
    const result = (await runAs(
      tenant,
      application,
      "module.exports = async (req) => ({ raw: await req.bt.tokenize({ type: 'token', data: 'tokenized by bt' }) });",
    )) as {
      raw: { id: string; created_by: string };
    };
    expect(result.raw.created_by).toBe(tenant.applicationId);
    const stored = await call("GET", `/tokens/${result.raw.id}`, { key: tenant.key });
    expect(stored.body.data).toBe("tokenized by bt");
  });

  it("bt.tokens.create, retrieve, update and delete act on the tenant's tokens", async () => {
    const code = `module.exports = async (req) => {
      const created = await req.bt.tokens.create({ type: "token", data: "lifecycle" });
      const retrieved = await req.bt.tokens.retrieve(created.id);
      const updated = await req.bt.tokens.update(created.id, { metadata: { stage: "updated" } });
      await req.bt.tokens.delete(created.id);
      let afterDelete;
      try { await req.bt.tokens.retrieve(created.id); } catch (error) { afterDelete = error.status; }
      return { raw: { id: created.id, data: retrieved.data, metadata: updated.metadata, afterDelete } };
    };`;
    const result = (await runAs(tenant, application, code)) as { raw: { id: string } };
    expect(result).toEqual({
      raw: { id: expect.any(String), data: "lifecycle", metadata: { stage: "updated" }, afterDelete: 404 },
    });
    // Each call is in the audit log, as the application, marked as made by tenant code.
    const entries = await logEntries(tenant, 5, { entity_type: "token", entity_id: result.raw.id });
    expect(entries.map(({ operation, status, actor_id, message }) => ({ operation, status, actor_id, message }))).toEqual(
      [
        ["create", 201, "Created token"],
        ["read", 200, "Read token"],
        ["update", 200, "Updated token"],
        ["delete", 204, "Deleted token"],
        ["read", 404, "Read token"],
      ].map(([operation, status, message]) => ({
        operation,
        status,
        actor_id: tenant.applicationId,
        message: `${message}: from reactor code`,
      })),
    );
  });

  it("bt.tokens.search finds the tenant's tokens", async () => {
    const marker = crypto.randomUUID().replace(/-/g, "");
    const token = await createToken(tenant.key, { type: "token", data: "findable", metadata: { marker } });
    // Tenant code with a template literal of its own.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${…} belongs to the tenant's code, not to this test
    const code = "module.exports = async (req) => ({ raw: await req.bt.tokens.search({ query: `metadata.marker:${req.args.marker}` }) });";
    const result = (await runAs(tenant, application, code, { marker })) as { raw: { data: { id: string }[] } };
    expect(result.raw.data.map((found) => found.id)).toEqual([token.id]);
  });

  it("a bt call the application may not make is a 403 the code can catch", async () => {
    const readOnly = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const principal = await principalOf(tenant.tenantId, readOnly.id);
    const result = await runAs(tenant, principal, reportingFailure("req.bt.tokenize({ type: 'token', data: 'x' })"));
    expect(result).toEqual({ raw: { name: "ApiError", status: 403, title: "Forbidden", errors: null } });
  });

  it("a bt failure the code does not catch is a 500 naming it", async () => {
    await expect(
      runAs(tenant, application, "module.exports = async (req) => ({ raw: await req.bt.tokens.retrieve('no-such-token') });"),
    ).rejects.toMatchObject({
      status: 500,
      message: "The reactor threw ApiError",
    });
  });

  it("bt checks its arguments as the API does", async () => {
    const invalidToken = await runAs(tenant, application, reportingFailure("req.bt.tokens.create({ type: 'no-such-type', data: 'x' })"));
    expect(invalidToken).toMatchObject({ raw: { status: 400, errors: { type: [expect.stringContaining("must be one of")] } } });
    const invalidId = await runAs(tenant, application, reportingFailure("req.bt.tokens.retrieve({ id: 1 })"));
    expect(invalidId).toMatchObject({ raw: { status: 400, errors: { id: [expect.stringContaining("must be a token id")] } } });
  });

  it("another tenant's token cannot be reached through bt", async () => {
    const other = await seedTokenTenant();
    const foreign = await createToken(other.key, { type: "token", data: "other tenant's secret" });
    const result = await runAs(tenant, application, reportingFailure(`req.bt.tokens.retrieve(${JSON.stringify(foreign.id)})`));
    expect(result).toMatchObject({ raw: { status: 404 } });
    expect(JSON.stringify(result)).not.toContain("other tenant's secret");
  });

  it("tampering with bt or its prototype does not change whom it acts as", async () => {
    const other = await seedTokenTenant();
    const foreign = await createToken(other.key, { type: "token", data: "other tenant's secret" });
    const code = `module.exports = async (req) => {
      Object.prototype.tenantId = req.args.otherTenant;
      Object.prototype.applicationId = req.args.otherApplication;
      Object.prototype.props = { tenantId: req.args.otherTenant, applicationId: req.args.otherApplication };
      try { req.bt.tokens.retrieve = async function forged() { return "forged"; }; } catch {}
      const replaced = req.bt.tokens.retrieve.name === "forged" ? "yes" : "no";
      try { await req.bt.tokens.retrieve(req.args.token); return { raw: "reached" }; }
      catch (error) { return { raw: { status: error.status, frozen: Object.isFrozen(req.bt) && Object.isFrozen(req.bt.tokens), replaced } }; }
    };`;
    const args = { otherTenant: other.tenantId, otherApplication: other.applicationId, token: foreign.id };
    expect(await runAs(tenant, application, code, args)).toEqual({ raw: { status: 404, frozen: true, replaced: "no" } });
  });

  it("bt stops working as soon as the application is deleted", async () => {
    const doomed = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const principal = await principalOf(tenant.tenantId, doomed.id);
    const deleted = await call("DELETE", `/applications/${doomed.id}`, { key: tenant.managementKey });
    expect(deleted.status).toBe(204);
    const result = await runAs(tenant, principal, reportingFailure("req.bt.tokenize({ type: 'token', data: 'x' })"));
    expect(result).toMatchObject({ raw: { status: 401 } });
  });
});
