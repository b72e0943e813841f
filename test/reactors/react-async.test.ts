import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { principalForKey } from "../../src/auth/service";
import { claimIdempotencyKey, commitMarkOf, requestHashOf } from "../../src/idempotency/service";
import worker from "../../src/index";
import { REACTORS } from "../../src/limits";
import { reactAsync as reactAsyncService } from "../../src/reactors/reactions";
import { claimReaction } from "../../src/reactors/storage-reactions";
import { entryWhere } from "../support/audit";
import { callConfigured } from "../support/configured";
import { DATA_DATABASES, requestContext, tenantContext } from "../support/context";
import { runCron } from "../support/cron";
import { call, createApplication, dumpDatabase, expectProblem, rowCounts, seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import {
  codeReactorRunning,
  createFormula,
  createReactor,
  ECHO_CODE,
  react,
  reactAsync,
  reactionResult,
  settledReaction,
} from "../support/reactors";
import { createToken, seedTokenTenant, seedTokenTenantIn, VISA } from "../support/tokens";

/** The queue async reactions travel on (wrangler.toml). */
const REACTION_QUEUE = "token-vault-reactions";
const RETENTION_MS = REACTORS.asyncResultRetentionMs;
/** Tests that wait for the queue's consumer (settledReaction waits up to 30 s for one run). */
const QUEUE_TEST_TIMEOUT_MS = 60_000;

/** Reactor code that hands back the args it received. */
const ARGS_CODE = "module.exports = async function (req) { return { raw: req.args }; };";

/** Reactor code that calls the loopback server once per run, with the marker it is given: the server counts the runs. */
const COUNTING_CODE = `module.exports = async function (req) {
  await fetch(req.args.url);
  return { raw: { ran: req.args.url } };
};`;

async function runsSeen(marker: string): Promise<number> {
  const reply = await fetch(`${inject("loopbackUrl")}/__seen?marker=${marker}`);
  return (await reply.json<{ count: number }>()).count;
}

const countingUrl = (marker: string) => `${inject("loopbackUrl")}/runs/${marker}`;

/** A REACTION_QUEUE that keeps what it is sent instead of delivering it: the reactions stay pending. */
function heldQueue() {
  const messages: unknown[] = [];
  const queue = {
    send: async (body: unknown) => {
      messages.push(body);
    },
    sendBatch: async (batch: { body: unknown }[]) => {
      messages.push(...batch.map((message) => message.body));
    },
  };
  return { messages, bindings: { REACTION_QUEUE: queue } };
}

/** POST /reactors/{id}/react-async through a deployment whose reaction queue holds its messages. */
function reactAsyncHeld(held: ReturnType<typeof heldQueue>, key: string, reactorId: string, args: unknown) {
  return callConfigured(held.bindings, "POST", `/reactors/${reactorId}/react-async`, { headers: { "SVC-API-KEY": key }, body: { args } });
}

/** Hands messages to the worker's queue handler as one batch of the reaction queue, as the queue would deliver them. */
async function deliver(messages: unknown[]) {
  const batch = createMessageBatch(
    REACTION_QUEUE,
    messages.map((body, i) => ({ id: `reaction-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  return getQueueResult(batch, ctx);
}

function requestIdOf(reply: { status: number; body: any }): string {
  expect(reply.status, JSON.stringify(reply.body)).toBe(202);
  expect(Object.keys(reply.body)).toEqual(["asyncReactorRequestId"]);
  expect(reply.body.asyncReactorRequestId).toMatch(/^[0-9a-f-]{36}$/);
  return reply.body.asyncReactorRequestId;
}

/** The tenant's rows of reactor_requests, in whichever data database holds them (the directory may have forgotten it). */
async function reactionRows(tenantId: string): Promise<Record<string, unknown>[]> {
  const rows = await Promise.all(
    DATA_DATABASES.map(async (d1) => (await d1.prepare("SELECT * FROM reactor_requests WHERE tenant_id = ?").bind(tenantId).all()).results),
  );
  return rows.flat() as Record<string, unknown>[];
}

describe("react-async: answered at once, run on the reaction queue", { timeout: QUEUE_TEST_TIMEOUT_MS }, () => {
  it("answers 202 with asyncReactorRequestId; the result is what react answers, with its status", async () => {
    const { reactor, caller } = await codeReactorRunning(ECHO_CODE, { configuration: { KEY: "value" } });
    const requestId = requestIdOf(await reactAsync(caller.key, reactor.id, { customer_id: "c-1" }));
    const result = await settledReaction(caller.key, reactor.id, requestId);
    const sync = await react(caller.key, reactor.id, { customer_id: "c-1" });
    expect(result).toMatchObject({
      id: requestId,
      reactor_id: reactor.id,
      status: "completed",
      tokens: sync.body.tokens,
      raw: sync.body.raw,
      error: null,
    });
    expect(Date.parse(result.expires_at) - Date.parse(result.created_at)).toBe(RETENTION_MS);
  });

  it("runs a formula's reactor too, with the args checked against its request parameters before anything is queued", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant, {
      code: ARGS_CODE,
      request_parameters: [{ name: "amount", type: "number" }],
    });
    const reactor = await createReactor(tenant, formula.id);
    const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const before = await rowCounts();
    expect(Object.keys(expectProblem(await reactAsync(caller.key, reactor.id, {}), 400).errors!)).toEqual(["args.amount"]);
    expect(await rowCounts()).toEqual(before);
    const requestId = requestIdOf(await reactAsync(caller.key, reactor.id, { amount: "12" }));
    expect((await settledReaction(caller.key, reactor.id, requestId)).raw).toEqual({ amount: 12 });
  });

  it("detokenizes the args with the caller's token:use before queuing: an unknown token is a 400 at once", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const { reactor } = await codeReactorRunning(ARGS_CODE, { tenant });
    const before = await rowCounts();
    expectProblem(await reactAsync(tenant.key, reactor.id, { pan: `{{ ${crypto.randomUUID()} }}` }), 400);
    expect(await rowCounts()).toEqual(before);
    const requestId = requestIdOf(await reactAsync(tenant.key, reactor.id, { pan: `{{ ${card.id} }}` }));
    expect((await settledReaction(tenant.key, reactor.id, requestId)).raw).toEqual({ pan: VISA });
  });

  it("a failure of the code is its result: status failed and the problem react answers, detokenized values redacted", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const code = `const { BadRequestError } = require("@token-vault/errors");
      module.exports = async function (req) { throw new BadRequestError({ card: "declined " + req.args.pan }); };`;
    const { reactor } = await codeReactorRunning(code, { tenant });
    const requestId = requestIdOf(await reactAsync(tenant.key, reactor.id, { pan: `{{ ${card.id} }}` }));
    const result = await settledReaction(tenant.key, reactor.id, requestId);
    expect(result).toMatchObject({ status: "failed", tokens: null, raw: null });
    expect(result.error).toMatchObject({ status: 400, title: "Bad Request", errors: { card: ["declined [redacted]"] } });
    expect(JSON.stringify(result)).not.toContain(VISA);
  });

  it("a CustomHttpResponseError is kept as the response the code chose, beside its problem", async () => {
    const code = `const { CustomHttpResponseError } = require("@token-vault/errors");
      module.exports = async () => { throw new CustomHttpResponseError({ status: 418, headers: { "x-partner": "teapot" }, body: { brewed: false } }); };`;
    const { reactor, caller } = await codeReactorRunning(code);
    const result = await settledReaction(caller.key, reactor.id, requestIdOf(await reactAsync(caller.key, reactor.id, {})));
    expect(result).toMatchObject({
      status: "failed",
      error: { status: 418, title: "Custom Response" },
      response: { status: 418, headers: { "x-partner": "teapot" }, body: { brewed: false } },
    });
  });

  it("the tokenize output is tokenized with the reactor's application", async () => {
    const tenant = await seedTokenTenant();
    const writer = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const code = "module.exports = async (req) => ({ tokenize: { type: 'token', data: req.args.secret } });";
    const { reactor, caller } = await codeReactorRunning(code, { tenant, applicationId: writer.id });
    const requestId = requestIdOf(await reactAsync(caller.key, reactor.id, { secret: "tokenized-later" }));
    const result = await settledReaction(caller.key, reactor.id, requestId);
    expect(result.status, JSON.stringify(result)).toBe("completed");
    expect(result.tokens).toMatchObject({ type: "token", id: expect.any(String) });
    const stored = await call("GET", `/tokens/${result.tokens.id}`, { key: tenant.key });
    expect(stored.body.data).toBe("tokenized-later");
  });

  it("stores the args, the result and what they detokenized only encrypted", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const { reactor } = await codeReactorRunning(ARGS_CODE, { tenant });
    const held = heldQueue();
    const pending = requestIdOf(await reactAsyncHeld(held, tenant.key, reactor.id, { pan: `{{ ${card.id} }}`, note: "plain-arg-7731" }));
    expect((await reactionResult(tenant.key, reactor.id, pending)).body).toMatchObject({ status: "pending", raw: null, error: null });
    let dump = await dumpDatabase();
    expect(dump).not.toContain(VISA);
    expect(dump).not.toContain("plain-arg-7731");
    await deliver(held.messages);
    expect((await settledReaction(tenant.key, reactor.id, pending)).raw).toEqual({ pan: VISA, note: "plain-arg-7731" });
    dump = await dumpDatabase();
    expect(dump).not.toContain(VISA);
    expect(dump).not.toContain("plain-arg-7731");
    const [row] = await reactionRows(tenant.tenantId);
    expect(row).toMatchObject({ status: "completed", args: null });
    expect(String(row!.result)).toMatch(/^v\d+\./);
    expect(String(row!.detokenized)).toMatch(/^v\d+\./);
  });

  it("tenant code run asynchronously has no ambient secrets either", async () => {
    const code = `module.exports = async () => ({ raw: {
      processEnv: process.env,
      bindings: [typeof DB, typeof REACTION_QUEUE, typeof VAULT_MASTER_KEYS, typeof env],
    } });`;
    const { reactor, caller } = await codeReactorRunning(code);
    const result = await settledReaction(caller.key, reactor.id, requestIdOf(await reactAsync(caller.key, reactor.id, {})));
    expect(result.raw).toEqual({ processEnv: {}, bindings: ["undefined", "undefined", "undefined", "undefined"] });
    for (const entry of env.VAULT_MASTER_KEYS.split(",")) expect(JSON.stringify(result)).not.toContain(entry.split(":")[1]);
  });
});

describe("react-async runs a reaction once", { timeout: QUEUE_TEST_TIMEOUT_MS }, () => {
  it("a retry with the same idempotency key answers the same request id, and the code runs once", async () => {
    const { reactor, caller } = await codeReactorRunning(COUNTING_CODE);
    const marker = `once-${crypto.randomUUID()}`;
    const headers = { "SVC-IDEMPOTENCY-KEY": `react-async-${marker}` };
    const first = requestIdOf(await reactAsync(caller.key, reactor.id, { url: countingUrl(marker) }, headers));
    const again = await reactAsync(caller.key, reactor.id, { url: countingUrl(marker) }, headers);
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ asyncReactorRequestId: first });
    expect((await settledReaction(caller.key, reactor.id, first)).status).toBe("completed");
    expect(await runsSeen(marker)).toBe(1);
  });

  it("a react-async killed after its reaction was stored, before its answer: a retry answers the same id at once, and it runs once", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(COUNTING_CODE);
    const marker = `killed-${crypto.randomUUID()}`;
    const key = `react-async-${marker}`;
    const path = `/reactors/${reactor.id}/react-async`;
    const body = { args: { url: countingUrl(marker) } };
    // The middleware's steps, as the idempotentWrite middleware takes them, stopped where a kill would stop them.
    const principal = (await principalForKey(requestContext(), caller.key))!;
    const context = await tenantContext(tenant.tenantId);
    const claimed = await claimIdempotencyKey(context, principal, {
      key,
      requestHash: await requestHashOf("POST", path, JSON.stringify(body)),
      request: `POST ${path}`,
      commitsWithWrite: true,
    });
    if (!("claim" in claimed)) throw new Error("the key was not claimed");
    context.markCommitWith(commitMarkOf(context, claimed.claim));
    const { asyncReactorRequestId } = await reactAsyncService(context, principal, reactor.id, body.args);
    const retry = await call("POST", path, { key: caller.key, body, headers: { "SVC-IDEMPOTENCY-KEY": key } });
    expect(retry.status, JSON.stringify(retry.body)).toBe(202);
    expect(retry.body).toEqual({ asyncReactorRequestId });
    expect((await settledReaction(caller.key, reactor.id, asyncReactorRequestId)).status).toBe("completed");
    expect(await runsSeen(marker)).toBe(1);
    expect(await reactionRows(tenant.tenantId)).toHaveLength(1);
  });

  it("a message delivered again runs nothing: the first delivery claimed the reaction", async () => {
    const { reactor, caller } = await codeReactorRunning(COUNTING_CODE);
    const marker = `redelivered-${crypto.randomUUID()}`;
    const held = heldQueue();
    const requestId = requestIdOf(await reactAsyncHeld(held, caller.key, reactor.id, { url: countingUrl(marker) }));
    const first = await deliver([held.messages[0], held.messages[0]]);
    expect(first.explicitAcks).toHaveLength(2);
    await deliver(held.messages);
    expect(await runsSeen(marker)).toBe(1);
    expect((await settledReaction(caller.key, reactor.id, requestId)).status).toBe("completed");
  });

  it("a reaction whose message never arrived is sent again by the cron, and runs", async () => {
    const { reactor, caller } = await codeReactorRunning(COUNTING_CODE);
    const marker = `resent-${crypto.randomUUID()}`;
    const held = heldQueue();
    const requestId = requestIdOf(await reactAsyncHeld(held, caller.key, reactor.id, { url: countingUrl(marker) }));
    await runCron(Date.now() + 5 * 60_000);
    expect((await settledReaction(caller.key, reactor.id, requestId)).status).toBe("completed");
    expect(await runsSeen(marker)).toBe(1);
  });

  it("a run that stopped after claiming its reaction is failed by the cron once its lease ends, and never runs", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(COUNTING_CODE);
    const marker = `stalled-${crypto.randomUUID()}`;
    const held = heldQueue();
    const requestId = requestIdOf(await reactAsyncHeld(held, caller.key, reactor.id, { url: countingUrl(marker) }));
    // A consumer evicted mid-run: its delivery claimed the reaction, then nothing.
    const context = await tenantContext(tenant.tenantId);
    expect(await claimReaction(context.db, tenant.tenantId, requestId, Date.now())).toBeDefined();
    expect((await reactionResult(caller.key, reactor.id, requestId)).body.status).toBe("running");
    await runCron(Date.now() + 10 * 60_000);
    const result = await settledReaction(caller.key, reactor.id, requestId);
    expect(result).toMatchObject({ status: "failed", error: { status: 500, title: "Reaction Stopped" } });
    expect(result.error.detail).toContain("not run again");
    await deliver(held.messages);
    expect(await runsSeen(marker)).toBe(0);
  });
});

describe("the result is answered under the caller's rules", { timeout: QUEUE_TEST_TIMEOUT_MS }, () => {
  it("another tenant, another reactor, a forged or malformed request id: 404 (400 for a malformed one)", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(ECHO_CODE);
    const requestId = requestIdOf(await reactAsync(caller.key, reactor.id, {}));
    await settledReaction(caller.key, reactor.id, requestId);
    const other = await createReactor(tenant, (await createFormula(tenant)).id);
    expectProblem(await reactionResult(caller.key, other.id, requestId), 404);
    expectProblem(await reactionResult(caller.key, reactor.id, crypto.randomUUID()), 404);
    expectProblem(await reactionResult(caller.key, reactor.id, "not-a-request-id"), 400);
    const stranger = await codeReactorRunning(ECHO_CODE);
    expectProblem(await reactionResult(stranger.caller.key, reactor.id, requestId), 404);
    expectProblem(await reactionResult(stranger.caller.key, stranger.reactor.id, requestId), 404);
    expectProblem(await reactAsync(stranger.caller.key, reactor.id, {}), 404);
  });

  it("react-async and the result need token:use", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(ECHO_CODE);
    const requestId = requestIdOf(await reactAsync(caller.key, reactor.id, {}));
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read", "token:create"] });
    expect(expectProblem(await reactAsync(reader.key, reactor.id, {}), 403).detail).toContain("token:use");
    expect(expectProblem(await reactionResult(reader.key, reactor.id, requestId), 403).detail).toContain("token:use");
    expectProblem(await reactionResult(tenant.managementKey, reactor.id, requestId), 403);
    expectProblem(await call("GET", `/reactors/${reactor.id}/results/${requestId}`), 401);
  });

  it("a caller who may not use every token the reaction detokenized is not shown its result, nor once a token is gone", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA, containers: ["/cards/"] });
    const { reactor } = await codeReactorRunning(ARGS_CODE, { tenant });
    const requestId = requestIdOf(await reactAsync(tenant.key, reactor.id, { pan: `{{ ${card.id} }}` }));
    expect((await settledReaction(tenant.key, reactor.id, requestId)).raw).toEqual({ pan: VISA });
    const elsewhere = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/other/", transform: "reveal", permissions: ["token:use"] }],
    });
    const masked = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/cards/", transform: "mask", permissions: ["token:use"] }],
    });
    const cardUser = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/cards/", transform: "reveal", permissions: ["token:use"] }],
    });
    for (const key of [elsewhere.key, masked.key]) {
      const refused = await reactionResult(key, reactor.id, requestId);
      expect(expectProblem(refused, 403).detail).toContain(card.id);
      expect(JSON.stringify(refused.body)).not.toContain(VISA);
    }
    expect((await reactionResult(cardUser.key, reactor.id, requestId)).body.raw).toEqual({ pan: VISA });
    expect((await call("DELETE", `/tokens/${card.id}`, { key: tenant.key })).status).toBe(204);
    const gone = await reactionResult(tenant.key, reactor.id, requestId);
    expect(JSON.stringify(expectProblem(gone, 403))).not.toContain(VISA);
  });
});

describe("bounds", { timeout: QUEUE_TEST_TIMEOUT_MS }, () => {
  it(`a tenant has at most ${REACTORS.maxOpenAsyncReactions} reactions waiting or running: one more is a 429, and nothing is stored`, async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(ECHO_CODE);
    const held = heldQueue();
    for (let sent = 0; sent < REACTORS.maxOpenAsyncReactions; sent += 10) {
      const replies = await Promise.all(Array.from({ length: 10 }, () => reactAsyncHeld(held, caller.key, reactor.id, {})));
      for (const reply of replies) requestIdOf(reply);
    }
    const refused = await reactAsyncHeld(held, caller.key, reactor.id, {});
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await reactionRows(tenant.tenantId)).toHaveLength(REACTORS.maxOpenAsyncReactions);
    // Another tenant is not held back by this one.
    const other = await codeReactorRunning(ECHO_CODE);
    requestIdOf(await reactAsync(other.caller.key, other.reactor.id, {}));
    // Run them, so that no later cron finds them waiting and queues them again.
    await deliver(held.messages);
    expect(new Set((await reactionRows(tenant.tenantId)).map((row) => row.status))).toEqual(new Set(["completed"]));
  });

  it("args that detokenize to more than the sandbox's input limit are a 413 at once", async () => {
    const tenant = await seedTokenTenant();
    const big = await createToken(tenant.key, { type: "token", data: "x".repeat(600_000) });
    const { reactor } = await codeReactorRunning(ARGS_CODE, { tenant });
    const before = await rowCounts();
    expectProblem(await reactAsync(tenant.key, reactor.id, { a: `{{ ${big.id} }}`, b: `{{ ${big.id} }}` }), 413);
    expect(await rowCounts()).toEqual(before);
  });

  it("a result (or a custom response) larger than an async result may hold is kept as a failure saying so", async () => {
    const code = `module.exports = async () => ({ raw: "x".repeat(${REACTORS.asyncResultMaxBytes + 1}) });`;
    const { reactor, caller } = await codeReactorRunning(code);
    // A result of the wrong shape is the code's fault, answered (and logged) as a 500, as react answers it.
    const result = await expectLoggedError(/larger than 1048576 bytes/, async () =>
      settledReaction(caller.key, reactor.id, requestIdOf(await reactAsync(caller.key, reactor.id, {}))),
    );
    expect(result).toMatchObject({ status: "failed", raw: null, error: { status: 500 } });
    expect(result.error.detail).toContain(`${REACTORS.asyncResultMaxBytes} bytes`);
    const custom = `const { CustomHttpResponseError } = require("@token-vault/errors");
      module.exports = async () => { throw new CustomHttpResponseError({ status: 402, headers: {}, body: "x".repeat(${REACTORS.asyncResultMaxBytes + 1}) }); };`;
    const chose = await codeReactorRunning(custom);
    const refused = await expectLoggedError(/larger than 1048576 bytes/, async () =>
      settledReaction(chose.caller.key, chose.reactor.id, requestIdOf(await reactAsync(chose.caller.key, chose.reactor.id, {}))),
    );
    expect(refused).toMatchObject({ status: "failed", response: null, error: { status: 500 } });
  });
});

describe("retention", { timeout: QUEUE_TEST_TIMEOUT_MS }, () => {
  it("the cron purges results once their retention ends", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(ECHO_CODE);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(requestIdOf(await reactAsync(caller.key, reactor.id, { i })));
    for (const id of ids) await settledReaction(caller.key, reactor.id, id);
    await runCron(Date.now() + RETENTION_MS - 60_000);
    expect(await reactionRows(tenant.tenantId)).toHaveLength(3);
    await runCron(Date.now() + RETENTION_MS + 60_000);
    expect(await reactionRows(tenant.tenantId)).toHaveLength(0);
    for (const id of ids) expectProblem(await reactionResult(caller.key, reactor.id, id), 404);
  });

  it("a reaction that detokenized a card's cvc keeps its result only until the cvc's deadline", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, {
      type: "card",
      data: { number: VISA, expiration_month: 11, expiration_year: 2030, cvc: "123" },
    });
    const { reactor } = await codeReactorRunning(ARGS_CODE, { tenant });
    const requestId = requestIdOf(await reactAsync(tenant.key, reactor.id, { card: `{{ ${card.id} }}` }));
    const result = await settledReaction(tenant.key, reactor.id, requestId);
    expect(result.raw?.card?.cvc, JSON.stringify(result)).toBe("123");
    const retention = Date.parse(result.expires_at) - Date.parse(result.created_at);
    // CARD_CVC_RETENTION_S is not set in the tests: its default, an hour.
    expect(retention).toBeLessThanOrEqual(3600 * 1000);
    await runCron(Date.now() + retention + 60_000);
    expect(await reactionRows(tenant.tenantId)).toHaveLength(0);
  });
});

describe("keys", { timeout: QUEUE_TEST_TIMEOUT_MS }, () => {
  it("a data-key rotation re-seals kept reactions under the new version, and they read the same after", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const { reactor } = await codeReactorRunning(ARGS_CODE, { tenant });
    const requestId = requestIdOf(await reactAsync(tenant.key, reactor.id, { pan: `{{ ${card.id} }}` }));
    const before = await settledReaction(tenant.key, reactor.id, requestId);
    const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };
    expect((await call("POST", `/tenants/${tenant.tenantId}/rotation`, { headers: operator })).status).toBe(202);
    const deadline = Date.now() + 45_000;
    let rotation = await call("GET", `/tenants/${tenant.tenantId}/rotation`, { headers: operator });
    while (rotation.body.state !== "done" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      rotation = await call("GET", `/tenants/${tenant.tenantId}/rotation`, { headers: operator });
    }
    expect(rotation.body).toMatchObject({ state: "done", to_version: 2 });
    const [row] = await reactionRows(tenant.tenantId);
    expect([String(row!.result).slice(0, 3), String(row!.detokenized).slice(0, 3)]).toEqual(["v2.", "v2."]);
    expect((await reactionResult(tenant.key, reactor.id, requestId)).body).toEqual(before);
  });
});

describe("moves", { timeout: QUEUE_TEST_TIMEOUT_MS }, () => {
  it("a tenant moved to another data database keeps its reactions, done and waiting, and runs the waiting one there", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    const { reactor, caller } = await codeReactorRunning(COUNTING_CODE, { tenant });
    const done = requestIdOf(await reactAsync(caller.key, reactor.id, { url: countingUrl(`moved-done-${crypto.randomUUID()}`) }));
    const finished = await settledReaction(caller.key, reactor.id, done);
    const marker = `moved-waiting-${crypto.randomUUID()}`;
    const waiting = requestIdOf(await reactAsyncHeld(heldQueue(), caller.key, reactor.id, { url: countingUrl(marker) }));
    const moved = await call("POST", `/tenants/${tenant.tenantId}/move`, {
      body: { database: "DB_2" },
      headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY },
    });
    expect(moved.body).toMatchObject({ phase: "done", target: "DB_2" });
    expect((await reactionResult(caller.key, reactor.id, done)).body).toEqual(finished);
    await runCron(Date.now() + 5 * 60_000);
    expect((await settledReaction(caller.key, reactor.id, waiting)).status).toBe("completed");
    expect(await runsSeen(marker)).toBe(1);
  });
});

describe("shredding", { timeout: QUEUE_TEST_TIMEOUT_MS }, () => {
  it("a crypto-shredded tenant's reactions are counted among its remaining rows and purged with them", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(ECHO_CODE);
    await settledReaction(caller.key, reactor.id, requestIdOf(await reactAsync(caller.key, reactor.id, {})));
    const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };
    const shredded = await call("DELETE", `/tenants/${tenant.tenantId}`, { headers: operator });
    expect(shredded.body.remaining_rows).toBeGreaterThanOrEqual(1);
    await runCron();
    expect(await reactionRows(tenant.tenantId)).toHaveLength(0);
  });
});

describe("audit", { timeout: QUEUE_TEST_TIMEOUT_MS }, () => {
  it("records the request, the run and each read of the result, like the other reactor operations", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(ECHO_CODE);
    const requestId = requestIdOf(await reactAsync(caller.key, reactor.id, {}));
    await settledReaction(caller.key, reactor.id, requestId);
    // Entries are written by the audit queue's consumer a moment after each request (the run's, after the run).
    const entryOf = (operation: string) =>
      entryWhere(tenant, { entity_type: "reactor" }, (entry) => entry.operation === operation && entry.message.includes(requestId));
    expect(await entryOf("react_async")).toMatchObject({ entity_id: reactor.id, status: 202, actor_id: caller.id });
    expect(await entryOf("react")).toMatchObject({
      entity_id: reactor.id,
      status: 200,
      actor_id: caller.id,
      message: `Ran async reaction ${requestId}`,
    });
    expect(await entryOf("read_result")).toMatchObject({ entity_id: reactor.id, status: 200, actor_id: caller.id });
  });
});
