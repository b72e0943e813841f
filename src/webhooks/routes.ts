import { createRoute, z } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { exampleCursorPage } from "../http/examples";
import { requireContentType } from "../http/middleware";
import { IDEMPOTENCY_KEY_HEADER } from "../http/openapi-document";
import { createRouter } from "../http/router";
import { cursorPaginated, IdParams, jsonBody, jsonContent, paginated, problemResponses } from "../http/schemas";
import { idempotentControlWrite } from "../idempotency/middleware";
import { WEBHOOK_EVENT_TYPES } from "./events";
import {
  CREATED_WEBHOOK_EXAMPLE,
  DELIVERIES_EXAMPLE,
  EVENT_TYPES_EXAMPLE,
  REPLACED_WEBHOOK_EXAMPLE,
  WEBHOOK_EXAMPLE,
  WEBHOOK_REPLACEMENT_EXAMPLE,
  WEBHOOK_REQUEST_EXAMPLE,
} from "./examples";
import { CreatedWebhookSchema, WebhookBody, WebhookDeliverySchema, WebhookListQuery, WebhookSchema } from "./schema";
import * as webhooks from "./service";

const tags = ["Webhooks"];
const security = [{ ApiKey: [] }];
const json = requireContentType("application/json");

const create = createRoute({
  method: "post",
  path: "/webhooks",
  tags,
  security,
  summary: "Create a webhook; its signing secret is shown once",
  description:
    "Needs `webhook:create`. Events of the types listed are delivered to `url` (which must pass the egress policy) as " +
    "`{event, delivered_at}`, signed per Standard Webhooks with the secret this answer holds. A tenant holds at most 5 " +
    "webhooks (409 beyond).",
  middleware: [requirePermission("webhook:create"), json, idempotentControlWrite(webhooks.answerCommittedCreate)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: jsonBody(WebhookBody, WEBHOOK_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(CreatedWebhookSchema, "The webhook, with its signing secret", CREATED_WEBHOOK_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

const list = createRoute({
  method: "get",
  path: "/webhooks",
  tags,
  security,
  summary: "List webhooks, a page at a time by cursor (or by number with `page`)",
  description:
    "Needs `webhook:read`. The tenant's webhooks, newest first, without their secrets; `id` (repeatable) and `name` " +
    "(`*` is the only wildcard, case-insensitive) narrow the list. Without `page` the answer is a cursor page " +
    "(`pagination: {page_size, next}`; `start` is the previous page's `next`, good only for the same filters and key); with " +
    "`page` it is a page by number (`pagination: {total_items, page_number, page_size, total_pages}`).",
  middleware: [requirePermission("webhook:read")] as const,
  request: { query: WebhookListQuery },
  responses: {
    200: jsonContent(
      z.union([paginated(WebhookSchema), cursorPaginated(WebhookSchema)]),
      "A page of webhooks: by cursor, or by number when `page` was sent",
      exampleCursorPage(WEBHOOK_EXAMPLE),
    ),
    ...problemResponses(400, 401, 403),
  },
});

const eventTypes = createRoute({
  method: "get",
  path: "/webhooks/event-types",
  tags,
  security,
  summary: "List the event types a webhook may subscribe to",
  description: "Needs `webhook:read`. Each is raised once the audit log holds the change it reports; token events never carry token data.",
  middleware: [requirePermission("webhook:read")] as const,
  responses: { 200: jsonContent(z.array(z.string()), "The event types", EVENT_TYPES_EXAMPLE), ...problemResponses(401, 403) },
});

const get = createRoute({
  method: "get",
  path: "/webhooks/{id}",
  tags,
  security,
  summary: "Get a webhook (never its secret)",
  description: "Needs `webhook:read`. Another tenant's webhook is a 404. `status` is disabled after deliveries kept failing.",
  middleware: [requirePermission("webhook:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(WebhookSchema, "The webhook", WEBHOOK_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const deliveries = createRoute({
  method: "get",
  path: "/webhooks/{id}/deliveries",
  tags,
  security,
  summary: "What became of the webhook's recent deliveries, newest first",
  description:
    "Needs `webhook:read`. One entry per event: its status (`delivered`, `retrying`, `failed`), the attempts made, and why " +
    "the last failed, as the receiver answered; never the event's payload. The newest 100 are kept; another tenant's webhook is a 404.",
  middleware: [requirePermission("webhook:read")] as const,
  request: { params: IdParams },
  responses: {
    200: jsonContent(z.object({ data: z.array(WebhookDeliverySchema) }), "The deliveries", DELIVERIES_EXAMPLE),
    ...problemResponses(400, 401, 403, 404),
  },
});

const update = createRoute({
  method: "put",
  path: "/webhooks/{id}",
  tags,
  security,
  summary: "Replace a webhook (its secret stays); status enabled re-enables a disabled one",
  description:
    "Needs `webhook:update`. Every member is replaced: one left out takes its default (`status` enabled, no `notify_email`). " +
    "The new `url` must pass the egress policy; another tenant's webhook is a 404.",
  middleware: [requirePermission("webhook:update"), json] as const,
  request: { params: IdParams, ...jsonBody(WebhookBody, WEBHOOK_REPLACEMENT_EXAMPLE) },
  responses: {
    200: jsonContent(WebhookSchema, "The webhook", REPLACED_WEBHOOK_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 413, 415),
  },
});

const remove = createRoute({
  method: "delete",
  path: "/webhooks/{id}",
  tags,
  security,
  summary: "Delete a webhook; deliveries still queued for it are dropped",
  description: "Needs `webhook:delete`. Its secret is deleted with it; another tenant's webhook is a 404.",
  middleware: [requirePermission("webhook:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

export const webhookRoutes = createRouter()
  .openapi(create, async (c) => c.json(await webhooks.createWebhook(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(list, async (c) => c.json(await webhooks.listWebhooks(c.var.context, c.var.principal, c.req.valid("query")), 200))
  .openapi(eventTypes, (c) => c.json([...WEBHOOK_EVENT_TYPES], 200))
  .openapi(get, async (c) => c.json(await webhooks.getWebhook(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(deliveries, async (c) => c.json(await webhooks.webhookDeliveries(c.var.context, c.req.valid("param").id), 200))
  .openapi(update, async (c) =>
    c.json(await webhooks.replaceWebhook(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(remove, async (c) => {
    await webhooks.deleteWebhook(c.var.context, c.var.principal, c.req.valid("param").id);
    return c.body(null, 204);
  });
