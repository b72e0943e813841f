import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { AppEnv } from "./context";
import { validationErrorOf } from "./validation";

/** The methods the vault serves, the API's routes and /proxy alike. */
export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

const TARGET_NAMES: Record<string, string> = { json: "body", query: "query", param: "path", header: "header" };

/** Every feature router: trailing slashes accepted, validation failures become our 400 problem. */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    strict: false,
    defaultHook: (result) => {
      if (!result.success) throw validationErrorOf(result.error, TARGET_NAMES[result.target] ?? result.target);
    },
  });
}

export type Router = ReturnType<typeof createRouter>;

/**
 * Adds responses and parameters to every operation registered on the router so far: what a
 * middleware of the whole router reads or answers is documented where that middleware is attached.
 */
export function documentEveryOperation(
  router: Router,
  { responses = {}, parameters = [] }: { responses?: RouteConfig["responses"]; parameters?: { $ref: string }[] },
): void {
  for (const definition of router.openAPIRegistry.definitions) {
    if (definition.type !== "route") continue;
    const { route } = definition;
    definition.route = {
      ...route,
      responses: { ...route.responses, ...responses },
      // The registry types parameters once per OpenAPI version; these are references, valid in each.
      ...(parameters.length > 0 ? { parameters: [...(route.parameters ?? []), ...parameters] as RouteConfig["parameters"] } : {}),
    };
  }
}
