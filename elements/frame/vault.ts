import type { FrameParameters, Problem } from "../protocol";
import { unreachable } from "./problems";

export type VaultOutcome = { ok: true; body: unknown } | { ok: false; problem: Problem };

/**
 * One call of the vault's API from a frame: same-origin, with the key in the deployment's header,
 * no cookies and no cache. Any failure comes back as a problem in the vault's shape.
 */
export async function callVault(
  parameters: FrameParameters,
  method: string,
  path: string,
  key: string,
  body?: unknown,
): Promise<VaultOutcome> {
  const headers: Record<string, string> = { [`${parameters.prefix}-API-KEY`]: key };
  if (body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      credentials: "omit",
      cache: "no-store",
    });
  } catch {
    return { ok: false, problem: unreachable() };
  }
  const answer: unknown = await response.json().catch(() => undefined);
  if (response.ok) return { ok: true, body: answer };
  const problem = isProblem(answer)
    ? answer
    : { title: response.statusText || "Error", status: response.status, detail: `The vault answered ${response.status}` };
  return { ok: false, problem };
}

export function isProblem(value: unknown): value is Problem {
  return typeof value === "object" && value !== null && typeof (value as Problem).status === "number";
}
