import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS, exampleChangedBy, exampleCreatedBy } from "../http/examples";
import { WEBHOOK_EVENT_TYPES } from "./events";
import type { WebhookBody } from "./schema";

/*
 * Examples of the webhook routes (the API reference page shows them, and
 * test/foundation/platform.test.ts parses each with its operation's schema).
 */

export const WEBHOOK_REQUEST_EXAMPLE = {
  name: "token events",
  url: "https://hooks.partner.example/vault",
  events: ["token.created", "token.deleted"],
  notify_email: "ops@partner.example",
} satisfies z.input<typeof WebhookBody>;

export const WEBHOOK_EXAMPLE = {
  id: EXAMPLE_IDS.webhook,
  tenant_id: EXAMPLE_IDS.tenant,
  ...WEBHOOK_REQUEST_EXAMPLE,
  status: "enabled" as const,
  ...exampleCreatedBy(EXAMPLE_IDS.managementApplication),
};

/** The signing secret is in this answer only. */
export const CREATED_WEBHOOK_EXAMPLE = { ...WEBHOOK_EXAMPLE, secret: "whsec_0BkyqU7j09xJrxBk1N3e7rPtoRyJVLrCCON0ZfPF9pQ=" };

/** Subscribed to updates too; `status: enabled` re-enables a webhook disabled after failed deliveries. */
export const WEBHOOK_REPLACEMENT_EXAMPLE = {
  ...WEBHOOK_REQUEST_EXAMPLE,
  events: ["token.created", "token.updated", "token.deleted"],
  status: "enabled",
} satisfies z.input<typeof WebhookBody>;

export const REPLACED_WEBHOOK_EXAMPLE = {
  ...WEBHOOK_EXAMPLE,
  events: WEBHOOK_REPLACEMENT_EXAMPLE.events,
  ...exampleChangedBy(EXAMPLE_IDS.managementApplication),
};

export const EVENT_TYPES_EXAMPLE = [...WEBHOOK_EVENT_TYPES];

export const DELIVERIES_EXAMPLE = {
  data: [
    {
      event_id: "0f0d3a52-5b1c-4b8e-9d7e-3c1a2b4d5e6f",
      event_type: "token.created",
      status: "retrying" as const,
      attempts: 2,
      last_outcome: "answered 503" as string | null,
      first_attempt_at: "2026-11-27T10:00:00.000Z",
      last_attempt_at: "2026-11-27T10:00:05.000Z",
    },
  ],
};
