import { z } from "@hono/zod-openapi";
import { Cursor, ListQuery, Name, PageNumber } from "../http/schemas";
import { WEBHOOKS } from "../limits";
import { WEBHOOK_EVENT_TYPES } from "./events";

/** The egress policy is checked by the service: it depends on configuration the schema cannot see. */
const Url = z
  .string({ error: "is required" })
  .max(WEBHOOKS.urlMaxLength, `must be at most ${WEBHOOKS.urlMaxLength} characters`)
  .pipe(z.url({ protocol: /^https?$/, error: "must be an absolute http(s) URL" }));

const Events = z
  .array(z.enum(WEBHOOK_EVENT_TYPES, { error: `must be one of ${WEBHOOK_EVENT_TYPES.join(", ")}` }), {
    error: "must be an array of event types",
  })
  .min(1, "must hold at least one event type")
  .max(WEBHOOK_EVENT_TYPES.length, `must hold at most ${WEBHOOK_EVENT_TYPES.length} event types`)
  .transform((events) => [...new Set(events)]);

export const WEBHOOK_STATUSES = ["enabled", "disabled"] as const;

export const WebhookBody = z
  .object({
    name: Name,
    url: Url,
    events: Events,
    status: z.enum(WEBHOOK_STATUSES, { error: "must be enabled or disabled" }).default("enabled"),
    notify_email: z.email({ error: "must be an email address" }).max(254).nullish(),
  })
  .openapi("WebhookRequest");
export type WebhookInput = z.infer<typeof WebhookBody>;

export const WebhookSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    name: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    status: z.enum(WEBHOOK_STATUSES),
    notify_email: z.string().nullable(),
    created_by: z.string().nullable(),
    created_at: z.string(),
    modified_by: z.string().nullable(),
    modified_at: z.string().nullable(),
  })
  .openapi("Webhook");
export type WebhookResponse = z.infer<typeof WebhookSchema>;

export const CreatedWebhookSchema = WebhookSchema.extend({
  secret: z.string().openapi({
    description: "The signing secret (Standard Webhooks, `whsec_…`): shown only in this response; store it to verify deliveries",
  }),
}).openapi("CreatedWebhook");

/**
 * `GET /webhooks` in either form (docs/decisions.md, "Webhook lists"): with `page`, a page by number
 * in the vault's list shape; otherwise a cursor page, `start` continuing one, in the shape the
 * original interface documents for webhooks.
 */
export const WebhookListQuery = ListQuery.extend({
  page: PageNumber.optional().openapi({
    description: "A page by number (`total_items`, `page_number`, `total_pages` answered); not with `start`",
  }),
  start: Cursor.optional(),
}).refine((query) => query.page === undefined || query.start === undefined, {
  path: ["start"],
  message: "pages by cursor or by number, not both: send start or page",
});

export type WebhookListRequest = z.infer<typeof WebhookListQuery>;

export const WebhookDeliverySchema = z
  .object({
    event_id: z.string().openapi({ description: "The event's id, sent as `webhook-id` on every attempt" }),
    event_type: z.string(),
    status: z.enum(["delivered", "retrying", "failed"]).openapi({
      description: "`retrying`: the queue tries again; `failed`: its retries are spent, or the webhook was disabled",
    }),
    attempts: z.number().int(),
    last_outcome: z
      .string()
      .nullable()
      .openapi({ description: "Why the last attempt failed (`answered 500`, `failed: …`); null once delivered" }),
    first_attempt_at: z.string(),
    last_attempt_at: z.string(),
  })
  .openapi("WebhookDelivery");
export type WebhookDeliveryResponse = z.infer<typeof WebhookDeliverySchema>;
