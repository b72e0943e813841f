import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../http/router";
import { jsonContent, problemResponses } from "../http/schemas";
import { APPLICATION_TYPES, mayHold, PERMISSION_DESCRIPTIONS, PERMISSIONS } from "./permissions";

const PermissionSchema = z
  .object({ type: z.string(), description: z.string(), application_types: z.array(z.enum(APPLICATION_TYPES)) })
  .openapi("Permission");

const PERMISSION_LIST = PERMISSIONS.map((permission) => ({
  type: permission,
  description: PERMISSION_DESCRIPTIONS[permission],
  application_types: APPLICATION_TYPES.filter((type) => mayHold(type, permission)),
}));

const list = createRoute({
  method: "get",
  path: "/permissions",
  tags: ["Applications"],
  security: [{ ApiKey: [] }],
  summary: "List every permission and the application types that may hold it",
  description:
    "Any valid API key may read it: the permissions an application or access rule can grant, each with what it allows. " +
    "`application_type` keeps those an application of that type may hold.",
  request: {
    query: z.object({
      application_type: z
        .enum(APPLICATION_TYPES, { error: `must be one of ${APPLICATION_TYPES.join(", ")}` })
        .optional()
        .openapi({ description: "Only the permissions an application of this type may hold" }),
    }),
  },
  // The example is the list itself, as the vault answers it without a filter.
  responses: { 200: jsonContent(z.array(PermissionSchema), "The permissions", PERMISSION_LIST), ...problemResponses(400, 401) },
});

export const permissionRoutes = createRouter().openapi(list, (c) => {
  const type = c.req.valid("query").application_type;
  return c.json(type ? PERMISSION_LIST.filter((permission) => permission.application_types.includes(type)) : PERMISSION_LIST, 200);
});
