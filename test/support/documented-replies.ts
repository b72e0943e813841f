import type { OpenAPIHono } from "@hono/zod-openapi";
import { buildApp } from "../../src/app";
import { ProblemSchema } from "../../src/http/schemas";
import type { Reply } from "./reply.mjs";

/*
 * Every reply the tests receive is held to the response the OpenAPI document declares for it: the
 * status must be documented for the operation, and the body must parse with that response's own zod
 * schema (the schema the served document is generated from), with no member the schema leaves out.
 */

/** Routes served outside the document on purpose. */
const UNDOCUMENTED_ROUTES = new Set(["GET /health", "GET /openapi.json"]);

type RouteConfig = Extract<OpenAPIHono["openAPIRegistry"]["definitions"][number], { type: "route" }>["route"];

interface Operation {
  /** `METHOD /path/{param}`, as the document names it. */
  name: string;
  pattern: RegExp;
  /** Placeholders in the path: the fewer, the more specific (`/applications/key` before `/applications/{id}`). */
  placeholders: number;
  responses: RouteConfig["responses"];
}

interface Schema {
  safeParse(
    value: unknown,
  ): { success: true; data: unknown } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
}

let operations: Operation[] | undefined;

/** The documented operations, from the registry of the very app the worker serves. */
function documentedOperations(): Operation[] {
  operations ??= buildApp()
    .openAPIRegistry.definitions.flatMap((definition) => (definition.type === "route" ? [definition.route] : []))
    .map((route) => ({
      name: `${route.method.toUpperCase()} ${route.path}`,
      pattern: patternOf(route.path),
      placeholders: route.path.split("{").length - 1,
      responses: route.responses,
    }))
    .sort((a, b) => a.placeholders - b.placeholders);
  return operations;
}

/** `{path}` is the proxy invocation's sub-path: any depth, possibly none. Other parameters are one segment. */
function patternOf(path: string): RegExp {
  const source = path
    .split(/(\/\{[^}]+\})/)
    .map((part) => {
      if (part === "/{path}") return "(?:/.*)?";
      if (part.startsWith("/{")) return "/[^/]+";
      return part.replace(/[.*+?^$()|[\]\\]/g, "\\$&");
    })
    .join("");
  return new RegExp(`^${source}/?$`);
}

/** The documented operation that answers `method path` (the path may carry a query), if any. */
export function documentedOperation(method: string, path: string): Operation | undefined {
  const pathname = path.split("?")[0]!;
  return documentedOperations().find(
    (operation) => operation.name.startsWith(`${method.toUpperCase()} `) && operation.pattern.test(pathname),
  );
}

/**
 * How the reply differs from its documented response, one line each: `<operation> <status>: <what>`.
 * A request no operation answers must be the vault's 404 or 405 problem, unless the route is served
 * outside the document on purpose.
 */
export function replyMismatches(method: string, path: string, reply: Reply): string[] {
  const operation = documentedOperation(method, path);
  if (!operation) {
    const route = `${method.toUpperCase()} ${path.split("?")[0]}`;
    if (UNDOCUMENTED_ROUTES.has(route)) return [];
    if (reply.status !== 404 && reply.status !== 405) return [`${route} ${reply.status}: no documented operation answers it`];
    return bodyMismatches(`${route} ${reply.status}`, reply, { "application/problem+json": { schema: ProblemSchema } });
  }
  const where = `${operation.name} ${reply.status}`;
  const responses = operation.responses;
  const response = responses[reply.status] ?? responses[`${String(reply.status)[0]}XX`] ?? responses.default;
  if (!response) return [`${where}: status not documented (documented: ${Object.keys(responses).join(", ")})`];
  if (!("description" in response)) return [`${where}: documented by reference, which this check does not follow`];
  return bodyMismatches(where, reply, response.content);
}

function bodyMismatches(where: string, reply: Reply, content: Record<string, unknown> | undefined): string[] {
  if (!content) return reply.text === "" ? [] : [`${where}: a body where the document declares none`];
  const mediaType = (reply.headers.get("content-type") ?? "").split(";")[0]!.trim();
  const media = (content[mediaType] ?? content[`${mediaType.split("/")[0]}/*`] ?? content["*/*"]) as { schema?: unknown } | undefined;
  if (!media) return [`${where}: content type "${mediaType}" not documented (documented: ${Object.keys(content).join(", ")})`];
  if (!isSchema(media.schema)) return [];
  const result = media.schema.safeParse(reply.body);
  if (!result.success) return result.error.issues.map((issue) => `${where}: ${pointer(issue.path)} ${issue.message}`);
  return undocumentedMembers(reply.body, result.data, []).map((path) => `${where}: ${pointer(path)} is not in the documented schema`);
}

const isSchema = (schema: unknown): schema is Schema => typeof (schema as Schema | undefined)?.safeParse === "function";

/** A zod object drops members its shape does not list: what the parse dropped was never documented. */
function undocumentedMembers(sent: unknown, parsed: unknown, path: PropertyKey[]): PropertyKey[][] {
  if (Array.isArray(sent) && Array.isArray(parsed)) {
    return sent.flatMap((item, index) => undocumentedMembers(item, parsed[index], [...path, index]));
  }
  if (!isRecord(sent) || !isRecord(parsed)) return [];
  return Object.entries(sent).flatMap(([key, value]) =>
    key in parsed ? undocumentedMembers(value, parsed[key], [...path, key]) : [[...path, key]],
  );
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

const pointer = (path: PropertyKey[]) => `body${path.map((key) => (typeof key === "number" ? `[${key}]` : `.${String(key)}`)).join("")}`;

/** Fails with every mismatch of the reply. */
export function expectDocumentedReply(method: string, path: string, reply: Reply): void {
  const unexpected = replyMismatches(method, path, reply);
  if (unexpected.length > 0) {
    throw new Error(`the reply to ${method} ${path} differs from the OpenAPI document:\n  ${unexpected.join("\n  ")}`);
  }
}
