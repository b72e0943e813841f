import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { principalForKey } from "../../src/auth/service";
import { createToken as createStoredToken, parseCreateToken } from "../../src/tokens/creation";
import { updateToken } from "../../src/tokens/update";
import { DATA_BINDINGS, requestContext, tenantContext } from "../support/context";
import { call, expectProblem } from "../support/harness";
import { createProxy, invoke } from "../support/proxies";
import { withMethod } from "../support/substitute";
import { createToken, seedTokenTenantIn } from "../support/tokens";

/*
 * An operator moves a tenant to another data database while it keeps working: its tokens are
 * copied, its writes wait (503, Retry-After) only while the last changes are copied and the
 * directory switches, and the old copy is purged.
 */

const DATA = DATA_BINDINGS;
const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

function move(tenantId: string, body: Record<string, unknown>) {
  return call("POST", `/tenants/${tenantId}/move`, { body, headers: operator });
}

async function rows(database: string, tenantId: string): Promise<number> {
  const row = await DATA[database]!.prepare("SELECT count(*) AS n FROM tokens WHERE tenant_id = ?").bind(tenantId).first<{ n: number }>();
  return row!.n;
}

/** Advances the move a step a call until it reaches `phase` (or twenty calls pass): the phase it reached. */
async function moveUntil(tenantId: string, database: string, phase: string): Promise<string> {
  let reached = "";
  for (let call = 0; call < 20 && reached !== phase; call++) {
    const reply = await move(tenantId, { database, max_batches: 1 });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    reached = reply.body.phase;
  }
  return reached;
}

/** Where the blocked phase's last copy stands: the stage its next step takes. */
async function moveStage(tenantId: string): Promise<string> {
  return (await env.DB.prepare("SELECT stage FROM tenant_moves WHERE tenant_id = ?").bind(tenantId).first<{ stage: string }>())!.stage;
}

async function placement(tenantId: string): Promise<string> {
  return (await env.DB.prepare("SELECT database FROM tenants WHERE id = ?").bind(tenantId).first<{ database: string }>())!.database;
}

describe("moving a tenant", () => {
  it("copies the tenant's tokens, switches the directory and purges the old copy", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    const token = await createToken(tenant.key, { type: "token", data: "moved", metadata: { trip: "one" } });
    await call("POST", "/tokenize", { key: tenant.key, body: { a: "x", b: "y" } });
    const reply = await move(tenant.tenantId, { database: "DB_2" });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({ tenant_id: tenant.tenantId, source: "DB_1", target: "DB_2", phase: "done" });
    expect(await placement(tenant.tenantId)).toBe("DB_2");
    expect(await rows("DB_2", tenant.tenantId)).toBe(3);
    expect(await rows("DB_1", tenant.tenantId)).toBe(0);
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).body.data).toBe("moved");
    const search = await call("POST", "/tokens/search", { key: tenant.key, body: { query: "metadata.trip:one" } });
    expect(search.body.data.map((found: { id: string }) => found.id)).toEqual([token.id]);
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: tenant.applicationId } });
    const forwarded = await invoke("POST", "", { proxyKey: proxy.key, body: { value: `{{ ${token.id} }}` } });
    expect(JSON.parse(forwarded.json.body)).toEqual({ value: "moved" });
  });

  it("is resumable: each call advances it by at most max_batches steps and answers its phase", async () => {
    const tenant = await seedTokenTenantIn("DB_2");
    for (let i = 0; i < 3; i++) {
      const payload = Object.fromEntries(Array.from({ length: 50 }, (_, j) => [`v${j}`, `value ${i}-${j}`]));
      expect((await call("POST", "/tokenize", { key: tenant.key, body: payload })).status).toBe(201);
    }
    const phases: string[] = [];
    const stages: string[] = [];
    for (let call = 0; call < 20 && phases.at(-1) !== "done"; call++) {
      const reply = await move(tenant.tenantId, { database: "DB_1", max_batches: 1 });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      phases.push(reply.body.phase);
      if (reply.body.phase === "blocked") stages.push(await moveStage(tenant.tenantId));
    }
    expect(phases.filter((phase, i) => phase !== phases[i - 1])).toEqual(["copying", "blocked", "switched", "done"]);
    // The last copy goes a bounded step a call too: the fence, the changed tokens, the deleted ones, the audit log and the switch.
    expect(stages.filter((stage, i) => stage !== stages[i - 1])).toEqual(["", "changed", "deleted", "audit"]);
    expect(await rows("DB_1", tenant.tenantId)).toBe(150);
    expect(await rows("DB_2", tenant.tenantId)).toBe(0);
  });

  it("purges the old copy a page a step, so that a large tenant's purge spans calls as its copy does", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    // More tokens than one purge page (500) holds.
    for (let i = 0; i < 11; i++) {
      const payload = Object.fromEntries(Array.from({ length: 50 }, (_, j) => [`v${j}`, `value ${i}-${j}`]));
      expect((await call("POST", "/tokenize", { key: tenant.key, body: payload })).status).toBe(201);
    }
    const phases: string[] = [];
    for (let call = 0; call < 20 && phases.at(-1) !== "done"; call++) {
      const reply = await move(tenant.tenantId, { database: "DB_2", max_batches: 1 });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      phases.push(reply.body.phase);
      // Each call that leaves the move switched has purged one page: the source holds less each time.
      if (reply.body.phase === "switched" && phases.at(-2) === "switched") expect(await rows("DB_1", tenant.tenantId)).toBeLessThan(550);
    }
    // The call that switches, then at least one that purges a full page and stays switched (the
    // tenant's audit entries, which the queue writes meanwhile, may take a page more).
    expect(phases.filter((phase) => phase === "switched").length, phases.join()).toBeGreaterThanOrEqual(2);
    expect(phases.at(-1)).toBe("done");
    expect(await rows("DB_2", tenant.tenantId)).toBe(550);
    expect(await rows("DB_1", tenant.tenantId)).toBe(0);
  });

  it("loses no write made while it runs and reads each back at once; writes during the switch answer 503 with Retry-After", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    await createToken(tenant.key, { type: "token", data: "before" });
    let moving = true;
    const answers: { status: number; id?: string; retryAfter: string | null }[] = [];
    const writer = (async () => {
      for (let i = 0; moving || i < 3; i++) {
        const reply = await call("POST", "/tokens", { key: tenant.key, body: { type: "token", data: `during ${i}` } });
        answers.push({ status: reply.status, id: reply.body?.id, retryAfter: reply.headers.get("retry-after") });
        // What was written reads back at once, whichever database holds it by then.
        if (reply.status === 201)
          expect((await call("GET", `/tokens/${reply.body.id}`, { key: tenant.key })).body.data).toBe(`during ${i}`);
      }
    })();
    const reply = await move(tenant.tenantId, { database: "DB_2" });
    moving = false;
    await writer;
    expect(reply.body.phase).toBe("done");
    for (const answer of answers) {
      expect([201, 503]).toContain(answer.status);
      if (answer.status === 503) expect(Number(answer.retryAfter)).toBeGreaterThan(0);
    }
    const written = answers.filter((answer) => answer.status === 201);
    expect(written.length).toBeGreaterThan(0);
    for (const answer of written) expect((await call("GET", `/tokens/${answer.id}`, { key: tenant.key })).status).toBe(200);
    expect(await rows("DB_2", tenant.tenantId)).toBe(written.length + 1);
    expect(await rows("DB_1", tenant.tenantId)).toBe(0);
  });

  it("copies tokens and idempotency answers that together pass what one D1 value holds, before and after writes are blocked", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    for (const offset of [0, 100]) {
      const payload = Object.fromEntries(Array.from({ length: offset === 0 ? 100 : 1 }, (_, i) => [`v${i}`, `small ${offset + i}`]));
      expect((await call("POST", "/tokenize", { key: tenant.key, body: payload })).status).toBe(201);
    }
    expect((await move(tenant.tenantId, { database: "DB_2", max_batches: 1 })).body.phase).toBe("copying");
    // Twelve tokens of 200 KB, written while the copy runs, each with its idempotency record holding
    // the answer: several MB, where D1 refuses any one value over 2 MB.
    const large = [];
    for (let i = 0; i < 12; i++) {
      const data = `${i}`.padEnd(200_000, "x");
      const headers = { "SVC-IDEMPOTENCY-KEY": `large-${i}` };
      const reply = await call("POST", "/tokens", { key: tenant.key, headers, body: { type: "token", data } });
      expect(reply.status).toBe(201);
      large.push({ id: reply.body.id as string, data, headers });
    }
    const reply = await move(tenant.tenantId, { database: "DB_2" });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.phase).toBe("done");
    expect(await rows("DB_2", tenant.tenantId)).toBe(113);
    expect(await rows("DB_1", tenant.tenantId)).toBe(0);
    for (const { id, data, headers } of large) {
      expect((await call("GET", `/tokens/${id}`, { key: tenant.key })).body.data).toBe(data);
      const replay = await call("POST", "/tokens", { key: tenant.key, headers, body: { type: "token", data } });
      expect(replay.body.id).toBe(id);
    }
  }, 30_000);

  it("refuses an unbound database, the tenant's own database and an unknown tenant", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    expect(expectProblem(await move(tenant.tenantId, { database: "DB_9" }), 400).detail).toContain("DB_1, DB_2");
    expect(expectProblem(await move(tenant.tenantId, { database: "DB_1" }), 400).detail).toContain("already there");
    expectProblem(await move("00000000-0000-4000-8000-000000000000", { database: "DB_2" }), 404);
  });

  it("refuses writes (not reads) while blocked, and a second target while a move is under way", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    await createToken(tenant.key, { type: "token", data: "one" });
    expect((await move(tenant.tenantId, { database: "DB_2", max_batches: 1 })).body.phase).toBe("blocked");
    const blocked = await call("POST", "/tokens", { key: tenant.key, body: { type: "token", data: "waits" } });
    expectProblem(blocked, 503);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await call("GET", "/tokens", { key: tenant.key })).status).toBe(200);
    expectProblem(await move(tenant.tenantId, { database: "DB_1" }), 409);
    expect((await move(tenant.tenantId, { database: "DB_2" })).body.phase).toBe("done");
  });

  it("answers two starts of the same move at once without a 500: one starts it, the other advances it or is told to call again", {
    timeout: 60_000,
  }, async () => {
    for (let round = 0; round < 3; round++) {
      const tenant = await seedTokenTenantIn("DB_1");
      await createToken(tenant.key, { type: "token", data: "one" });
      const replies = await Promise.all([
        move(tenant.tenantId, { database: "DB_2", max_batches: 1 }),
        move(tenant.tenantId, { database: "DB_2", max_batches: 1 }),
      ]);
      for (const reply of replies) expect([200, 409], JSON.stringify(reply.body)).toContain(reply.status);
      expect((await move(tenant.tenantId, { database: "DB_2" })).body.phase).toBe("done");
      expect(await rows("DB_2", tenant.tenantId)).toBe(1);
    }
  });

  it("of a shred and a move of the same tenant started at once, at most one starts: a move of a shredded tenant is refused from its next call on and would leave its copy in the target", {
    timeout: 60_000,
  }, async () => {
    for (let round = 0; round < 5; round++) {
      const tenant = await seedTokenTenantIn("DB_1");
      await createToken(tenant.key, { type: "token", data: "one" });
      const [shredded, moved] = await Promise.all([
        call("DELETE", `/tenants/${tenant.tenantId}`, { headers: operator }),
        move(tenant.tenantId, { database: "DB_2", max_batches: 1 }),
      ]);
      const started = [shredded.status, moved.status].filter((status) => status === 200);
      expect(started, JSON.stringify([shredded.body, moved.body])).toHaveLength(1);
      if (moved.status === 200) expect((await move(tenant.tenantId, { database: "DB_2" })).body.phase).toBe("done");
    }
  });

  it("loses no update that was under way when the move began: the move copies the token before the update lands in the source", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    const token = await createToken(tenant.key, { type: "token", data: "before", metadata: { version: "1" } });
    // The update's write reaches the source database only once the move's first step has copied the token.
    const { contextOf, principal, atWrite, release } = await heldWrites(tenant);
    const context = await contextOf();
    const updating = updateToken(context, principal, token.id, { metadata: { version: "2" } });
    await atWrite;
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await move(tenant.tenantId, { database: "DB_2", max_batches: 1 })).body.phase).toBe("blocked");
    release();
    // Acknowledged: the caller is told the token was updated.
    expect((await updating).metadata).toEqual({ version: "2" });

    const reply = await move(tenant.tenantId, { database: "DB_2" });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.phase).toBe("done");
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).body.metadata).toEqual({ version: "2" });
  });

  it("loses no create that was under way when the move began, and does not stay blocked over it", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    await createToken(tenant.key, { type: "token", data: "before" });
    // The create's write reaches the source database only once the move's first step has copied the tokens.
    const { contextOf, principal, atWrite, release } = await heldWrites(tenant);
    const context = await contextOf();
    const creating = createStoredToken(context, principal, parseCreateToken({ type: "token", data: "in flight" }));
    await atWrite;
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await move(tenant.tenantId, { database: "DB_2", max_batches: 1 })).body.phase).toBe("blocked");
    release();
    // Acknowledged: the caller is told the token was created.
    const created = await creating;

    // A 409 says to call again: the move must get through, or the tenant's writes stay blocked.
    let reply = await move(tenant.tenantId, { database: "DB_2" });
    for (let again = 0; again < 3 && reply.status === 409; again++) reply = await move(tenant.tenantId, { database: "DB_2" });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.phase).toBe("done");
    expect((await call("GET", `/tokens/${created.id}`, { key: tenant.key })).status).toBe(200);
  });
  it("refuses a create and an update that reach the source once the move fenced it: 503 with Retry-After, and nothing written", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    const token = await createToken(tenant.key, { type: "token", data: "before", metadata: { version: "1" } });
    // Both writes reach the source database only once the move has fenced it and switched the directory.
    const { contextOf, principal, atWrite, release } = await heldWrites(tenant, 2);
    const creating = createStoredToken(await contextOf(), principal, parseCreateToken({ type: "token", data: "too late" }));
    const updating = updateToken(await contextOf(), principal, token.id, { metadata: { version: "2" } });
    await atWrite;
    expect((await move(tenant.tenantId, { database: "DB_2", max_batches: 1 })).body.phase).toBe("blocked");
    expect(await moveUntil(tenant.tenantId, "DB_2", "switched")).toBe("switched");
    release();
    for (const refused of [creating, updating]) {
      await expect(refused).rejects.toMatchObject({ status: 503, headers: { "Retry-After": expect.stringMatching(/^[1-9]\d*$/) } });
    }

    expect((await move(tenant.tenantId, { database: "DB_2" })).body.phase).toBe("done");
    const listed = await call("GET", "/tokens", { key: tenant.key });
    expect(listed.body.data.map((token: { id: string }) => token.id)).toEqual([token.id]);
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).body.metadata).toEqual({ version: "1" });
    expect(await rows("DB_1", tenant.tenantId)).toBe(0);
  });
});

/**
 * Contexts of the tenant over DB_1 whose batches wait, once `writes` of them have arrived (atWrite),
 * until release(): writes under way whose statements reach the source database when the test says.
 */
async function heldWrites(tenant: { tenantId: string; key: string }, writes = 1) {
  let arrived = 0;
  let allAtWrite!: () => void;
  const atWrite = new Promise<void>((resolve) => {
    allAtWrite = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const slow = withMethod(env.DB_1, "withSession", ((constraint?: string) => {
    const session = env.DB_1.withSession(constraint);
    return withMethod(session, "batch", (async (statements: D1PreparedStatement[]) => {
      if (++arrived === writes) allAtWrite();
      await released;
      return session.batch(statements);
    }) as D1DatabaseSession["batch"]);
  }) as D1Database["withSession"]);
  const principal = (await principalForKey(requestContext(), tenant.key))!;
  const contextOf = () => tenantContext(tenant.tenantId, { ...env, DB_1: slow } as typeof env);
  return { contextOf, principal, atWrite, release };
}
