import { createRoute, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { CreatedApplicationSchema } from "../applications/schema";
import { secretsEqual } from "../crypto/secrets";
import type { AppEnv } from "../http/context";
import { requireContentType } from "../http/middleware";
import { NotFoundError, UnauthenticatedError } from "../http/problem";
import { createRouter } from "../http/router";
import { jsonBody, jsonContent, Name, problemResponses } from "../http/schemas";
import { createTenant } from "./service";

/** Operators only: `{P}-OPERATOR-KEY` must equal OPERATOR_API_KEY; without that secret the route does not exist. */
const requireOperator: MiddlewareHandler<AppEnv> = async (c, next) => {
  const expected = c.var.config.OPERATOR_API_KEY;
  if (!expected) throw new NotFoundError("Route POST /tenants");
  const given = c.req.header(c.var.config.headers.operatorKey);
  if (!given || !(await secretsEqual(given, expected))) {
    throw new UnauthenticatedError(`A valid ${c.var.config.HEADER_PREFIX}-OPERATOR-KEY header is required`);
  }
  await next();
};

const create = createRoute({
  method: "post",
  path: "/tenants",
  tags: ["Operators"],
  security: [{ OperatorKey: [] }],
  summary: "Create a tenant with its first management application and key (operators only)",
  middleware: [requireOperator, requireContentType("application/json")] as const,
  request: jsonBody(
    z
      .object({
        name: Name,
        database: z
          .string()
          .regex(/^DB(_\d+)?$/, "must be a data database binding (DB_1, DB_2 …)")
          .optional()
          .openapi({ description: "The data database to place the tenant in; by default the one holding the fewest tenants" }),
      })
      .openapi("CreateTenant"),
  ),
  responses: {
    201: jsonContent(
      z.object({
        tenant: z.object({ id: z.string(), name: z.string(), database: z.string(), created_at: z.string() }),
        application: CreatedApplicationSchema,
      }),
      "The tenant, its management application and the application's key (shown once)",
    ),
    ...problemResponses(400, 401, 404, 415),
  },
});

export const tenantRoutes = createRouter().openapi(create, async (c) =>
  c.json(await createTenant(c.var.request, c.req.valid("json")), 201),
);
