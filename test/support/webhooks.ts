import { expect, inject } from "vitest";
import { call, type Tenant } from "./harness";

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** A receiver path on the loopback server, unique to the test; `status` makes it answer that status. */
export function receiver(status?: number): { name: string; url: string } {
  const name = `r${crypto.randomUUID().replaceAll("-", "")}`;
  return { name, url: `${inject("loopbackUrl")}/hooks/${name}${status ? `/status/${status}` : ""}` };
}

/** POST /webhooks that must succeed; returns the webhook with its secret. */
export async function createWebhook(tenant: Tenant, body: Record<string, unknown>): Promise<any> {
  const reply = await call("POST", "/webhooks", { key: tenant.managementKey, body: { name: "hook", events: ["token.created"], ...body } });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

/** What the receiver got, once it has at least `atLeast` requests (deliveries are asynchronous). */
export async function receivedBy(name: string, atLeast: number, timeoutMs = 15_000): Promise<Received[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${inject("loopbackUrl")}/__received?marker=${name}`);
    const received = (await response.json()) as Received[];
    if (received.length >= atLeast || Date.now() > deadline) return received;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
