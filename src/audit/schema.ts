import { z } from "@hono/zod-openapi";
import { Cursor, PageNumber, PageQuery, PaginationSchema } from "../http/schemas";
import { ACTOR_TYPES } from "./entry";

/** An ISO 8601 date or date-time query parameter, as milliseconds. */
const DateQuery = z
  .string()
  .refine((text) => /^\d{4}-\d{2}-\d{2}/.test(text) && !Number.isNaN(Date.parse(text)), "must be an ISO 8601 date or date-time")
  .transform((text) => Date.parse(text))
  .optional();

export const LogQuery = PageQuery.extend({
  page: PageNumber.optional().openapi({ description: "A page by number (1 unless given); not with `start`" }),
  start: Cursor.optional().openapi({
    description:
      "The `pagination.next` of the previous page, for the page after it (by cursor, without counting); good only for the same filters and key",
  }),
  entity_type: z.string().max(64).optional().openapi({ description: "Only entries about this entity type (see /logs/entity-types)" }),
  entity_id: z.string().max(200).optional().openapi({ description: "Only entries about this entity" }),
  actor_id: z.string().max(200).optional().openapi({
    description: "Only entries of this actor: the application (or `operator`) that made the request. An extension of the vault's",
  }),
  operation: z
    .string()
    .max(64)
    .optional()
    .openapi({ description: "Only entries of this operation (`create`, `read`, `invoke` …). An extension of the vault's" }),
  start_date: DateQuery.openapi({ description: "Entries created at or after this time (ISO 8601)" }),
  end_date: DateQuery.openapi({ description: "Entries created before this time (ISO 8601)" }),
}).refine((query) => query.page === undefined || query.start === undefined, {
  path: ["start"],
  message: "pages by cursor or by number, not both: send start or page",
});

export type LogListRequest = z.infer<typeof LogQuery>;

/** A page by number of GET /logs: the list's pagination, and the cursor of the page after it when one follows. */
export const LogPaginationSchema = PaginationSchema.extend({
  next: z.string().optional().openapi({ description: "Pass it as `start` for the next page by cursor; absent on the last page" }),
}).openapi("LogPagination");

export const LogSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    actor_id: z.string().nullable(),
    actor_type: z.enum(ACTOR_TYPES),
    credential_id: z.string().nullable(),
    entity_type: z.string(),
    entity_id: z.string().nullable(),
    operation: z.string(),
    message: z.string(),
    status: z.number().int().openapi({ description: "The outcome: the HTTP status the request answered" }),
    trace_id: z.string(),
    created_at: z.string(),
    seq: z.number().int().openapi({ description: "The entry's position in the tenant's hash chain" }),
    hash: z.string().openapi({ description: "The keyed hash linking the entry to the one before it" }),
  })
  .openapi("Log");

export const EntityTypeSchema = z.object({ display_name: z.string(), value: z.string() }).openapi("LogEntityType");

export const VerifyQuery = z
  .object({
    start_date: DateQuery.openapi({ description: "Verify from the first entry created at or after this time" }),
    end_date: DateQuery.openapi({ description: "Verify up to the entries created before this time" }),
    after_seq: z.coerce
      .number({ error: "must be a whole number" })
      .int("must be a whole number")
      .min(0, "must be 0 or more")
      .max(Number.MAX_SAFE_INTEGER, "is too large")
      .optional()
      .openapi({
        type: "integer",
        description:
          "Verify from the entry after this seq: where a call that answered `complete: false` stopped (its `last_seq`). " +
          "Entries chained late keep their earlier created_at, so a date cannot say where to go on.",
      }),
  })
  .refine((query) => query.after_seq === undefined || query.start_date === undefined, {
    path: ["after_seq"],
    message: "cannot be given with start_date: each says where to start",
  });

export const VerificationSchema = z
  .object({
    verified: z.boolean().openapi({ description: "Whether every link checked holds" }),
    checked: z.number().int().openapi({ description: "Entries checked" }),
    first_seq: z.number().int().nullable(),
    last_seq: z.number().int().nullable(),
    head_seq: z.number().int().openapi({ description: "The last entry the writer recorded" }),
    anchor_seq: z.number().int().openapi({ description: "The last entry retention purged (0: none)" }),
    pending: z.number().int().openapi({
      description:
        "Entries recorded but not chained yet: kept in audit_pending when the queue could not take them, chained by the writer or the cron",
    }),
    complete: z
      .boolean()
      .openapi({ description: "False when the range held more entries than one call checks; verify the rest with a later start_date" }),
    broken_at: z
      .object({
        seq: z.number().int(),
        entry_id: z.string().nullable(),
        reason: z.string(),
      })
      .nullable()
      .openapi({ description: "Where the chain breaks: the first entry whose link does not hold" }),
  })
  .openapi("LogVerification");

export const SUMMARY_WINDOWS = { "24h": 24, "7d": 7 * 24 } as const;

export const SummaryQuery = z.object({
  window: z
    .enum(Object.keys(SUMMARY_WINDOWS) as ["24h", "7d"], { error: "must be 24h or 7d" })
    .default("24h")
    .openapi({ description: "The hours summarized: the last 24 (`24h`, by default) or the last 168 (`7d`), the current one included" }),
});

const BusiestSchema = z.object({
  id: z.string(),
  name: z.string().nullable().openapi({ description: "Null once deleted" }),
  calls: z.number().int(),
  errors: z.number().int().openapi({ description: "Calls answered with a status of 400 or more" }),
});

export const SummarySchema = z
  .object({
    window: z.enum(["24h", "7d"]),
    from: z.string().openapi({ description: "The start of the window's first hour" }),
    to: z.string().openapi({ description: "When the summary was made" }),
    requests_by_hour: z
      .array(
        z.object({
          hour: z.string().openapi({ description: "The hour's start" }),
          "2xx": z.number().int(),
          "3xx": z.number().int(),
          "4xx": z.number().int(),
          "5xx": z.number().int(),
        }),
      )
      .openapi({ description: "Every hour of the window, oldest first: the requests recorded in it, by the class of their status" }),
    busiest_proxies: z.array(BusiestSchema).openapi({ description: "The proxies called most in the window (at most 10)" }),
    busiest_reactors: z
      .array(BusiestSchema)
      .openapi({ description: "The reactors run most in the window (at most 10), async runs included" }),
    recent_errors: z
      .array(
        z.object({
          created_at: z.string(),
          operation: z.string(),
          status: z.number().int(),
          trace_id: z.string(),
          entity_type: z.string(),
          entity_id: z.string().nullable(),
        }),
      )
      .openapi({
        description: "The newest entries of the window with a status of 400 or more (at most 20): see GET /logs for the whole entry",
      }),
  })
  .openapi("LogSummary");

export type Summary = z.infer<typeof SummarySchema>;
