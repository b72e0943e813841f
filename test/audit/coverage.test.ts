import { describe, expect, it } from "vitest";
import { AUDITED_ROUTES } from "../../src/audit/operations";
import { documentedOperations } from "../support/openapi";

/** Routes that answer without a credential and touch no tenant's data. */
const UNAUDITED = ["GET /health", "GET /ping", "GET /openapi.json"];

describe("what the audit log covers", () => {
  it("every documented route records an entry, and the table names no route that is gone", async () => {
    const documented = (await documentedOperations()).map(({ method, path }) =>
      path.startsWith("/proxy/") ? "ALL /proxy" : `${method.toUpperCase()} ${path}`,
    );
    const routes = [...new Set(documented)].filter((route) => !UNAUDITED.includes(route));
    expect(routes.filter((route) => !(route in AUDITED_ROUTES))).toEqual([]);
    expect(Object.keys(AUDITED_ROUTES).filter((route) => !routes.includes(route))).toEqual([]);
  });
});
