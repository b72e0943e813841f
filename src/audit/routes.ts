import { createRoute, z } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { examplePage } from "../http/examples";
import { staleReadsAllowed } from "../http/middleware";
import { createRouter } from "../http/router";
import { cursorPaginated, jsonContent, problemResponses } from "../http/schemas";
import { ENTITY_TYPES_EXAMPLE, LOG_ENTRY_EXAMPLE, SUMMARY_EXAMPLE, VERIFICATION_EXAMPLE } from "./examples";
import {
  EntityTypeSchema,
  LogPaginationSchema,
  LogQuery,
  LogSchema,
  SummaryQuery,
  SummarySchema,
  VerificationSchema,
  VerifyQuery,
} from "./schema";
import { entityTypes, listLogs, verifyLogs } from "./service";
import { summarizeLogs } from "./summary";

const tags = ["Audit log"];
const security = [{ ApiKey: [] }];

const list = createRoute({
  method: "get",
  path: "/logs",
  tags,
  security,
  summary: "List the tenant's audit log, newest first",
  description:
    "Needs `log:read`. Entries record every operation on tokens (each token a proxy, reactor or detokenization uses " +
    "included), every request to applications, keys, proxies, formulas, reactors, webhooks and tenants, and every refused " +
    "request, never with token data, keys, configuration values, request bodies or code. An entry appears once the audit " +
    "queue's consumer has written it, usually within a second or two. Filtered by `actor_id` or `operation` (the vault's " +
    "extensions of the original's filters), `entity_id` or `entity_type`, a page reads one index range of that filter. Pages are by number (`page`), and " +
    "each but the last also answers `pagination.next`: sent back as `start`, it gives the page after it by cursor, which " +
    "counts nothing and skips no entries by offset, for the same filters and key only.",
  middleware: [requirePermission("log:read"), staleReadsAllowed] as const,
  request: { query: LogQuery },
  responses: {
    200: jsonContent(
      z.union([z.object({ pagination: LogPaginationSchema, data: z.array(LogSchema) }), cursorPaginated(LogSchema)]),
      "A page of entries: by number, or by cursor when `start` was sent",
      examplePage(LOG_ENTRY_EXAMPLE),
    ),
    ...problemResponses(400, 401, 403),
  },
});

const types = createRoute({
  method: "get",
  path: "/logs/entity-types",
  tags,
  security,
  summary: "List the entity types entries can name",
  description: "Needs `log:read`. The values `entity_type` takes in entries and in the `GET /logs` filter, with a display name each.",
  middleware: [requirePermission("log:read")] as const,
  responses: { 200: jsonContent(z.array(EntityTypeSchema), "The entity types", ENTITY_TYPES_EXAMPLE), ...problemResponses(401, 403) },
});

const verify = createRoute({
  method: "get",
  path: "/logs/verify",
  tags,
  security,
  summary: "Verify the audit log's hash chain",
  description:
    "Needs `log:read`. Recomputes each entry's keyed hash from its content and the previous entry's hash, over the range " +
    "given (by default from the oldest entry retention kept to the newest). `broken_at` names the first entry whose link " +
    "does not hold: an entry edited, deleted or moved in the database. Whatever the range, the chain's head and anchor " +
    "must carry their MACs, so a log cut at its end or at its start does not verify. One call checks at most 20,000 entries " +
    "(`complete: false`); the next goes on with `after_seq` set to the `last_seq` answered.",
  middleware: [requirePermission("log:read")] as const,
  request: { query: VerifyQuery },
  responses: { 200: jsonContent(VerificationSchema, "The verification", VERIFICATION_EXAMPLE), ...problemResponses(400, 401, 403) },
});

const summary = createRoute({
  method: "get",
  path: "/logs/summary",
  tags,
  security,
  summary: "Summarize what the vault did for the tenant over the last 24 hours or 7 days",
  description:
    "Needs `log:read`. Requests per hour by the class of their status, the busiest proxies and reactors with their failures, " +
    "and the most recent errors with their trace ids (find the whole entries with GET /logs). Kept as the audit log is " +
    "written, so it counts what the log holds: a request shows once the audit queue's consumer has written its entry. A " +
    "request counts once, however many tokens it used; a failed one may list an error for each token it used, with the same trace id.",
  middleware: [requirePermission("log:read"), staleReadsAllowed] as const,
  request: { query: SummaryQuery },
  responses: { 200: jsonContent(SummarySchema, "The summary", SUMMARY_EXAMPLE), ...problemResponses(400, 401, 403) },
});

export const logRoutes = createRouter()
  .openapi(list, async (c) => c.json(await listLogs(c.var.context, c.var.principal, c.req.valid("query")), 200))
  .openapi(types, (c) => c.json(entityTypes(), 200))
  .openapi(summary, async (c) => c.json(await summarizeLogs(c.var.context, c.req.valid("query").window), 200))
  .openapi(verify, async (c) => {
    const query = c.req.valid("query");
    const range = { startDate: query.start_date, endDate: query.end_date, afterSeq: query.after_seq };
    return c.json(await verifyLogs(c.var.context, c.var.principal, range), 200);
  });
