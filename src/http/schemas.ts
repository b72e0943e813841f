import { z } from "@hono/zod-openapi";
import { CURSOR_MAX_LENGTH, NAME_MAX_LENGTH, PAGE_MAX_SIZE } from "../limits";

export const Uuid = z.uuid({ error: "must be a UUID" }).transform((id) => id.toLowerCase());

export const IdParams = z.object({ id: Uuid.openapi({ param: { name: "id", in: "path" } }) });

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z.record(z.string(), z.array(z.string())).optional(),
  })
  .openapi("Problem", {
    description: "RFC 7807 problem details; `errors` names each invalid member",
    example: {
      type: "about:blank",
      title: "Bad Request",
      status: 400,
      detail: "Invalid body: data: must be a string of 13 to 19 digits for type card_number",
      errors: { data: ["must be a string of 13 to 19 digits for type card_number"] },
    },
  });

/** `page` of a list paged by number. */
export const PageNumber = z.coerce.number({ error: "must be an integer" }).int("must be an integer").min(1, "must be at least 1");

export const PageQuery = z.object({
  page: PageNumber.default(1),
  size: z.coerce
    .number({ error: "must be an integer" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(PAGE_MAX_SIZE, `must be at most ${PAGE_MAX_SIZE}`)
    .default(20),
});

/** `start` of a cursor-paged request: the `pagination.next` of the page before, opaque to clients (src/db/cursors.ts). */
export const Cursor = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(CURSOR_MAX_LENGTH, `must be at most ${CURSOR_MAX_LENGTH} characters`)
  .openapi({ description: "The `pagination.next` of the previous page, as it was answered; left out for the first page" });

/** A query parameter that may be repeated (`?id=a&id=b`): always an array after parsing. */
export const repeatable = <T extends z.ZodType>(item: T) =>
  z.preprocess((value) => (value === undefined ? [] : Array.isArray(value) ? value : [value]), z.array(item).max(100));

/**
 * The options of a body object that refuses members it does not know (`z.strictObject(shape,
 * UNKNOWN_MEMBERS_REFUSED)`): a member the vault would not keep is a 400 naming it, never dropped.
 */
export const UNKNOWN_MEMBERS_REFUSED = {
  error: (issue: { code?: string; keys?: string[] }) =>
    issue.code === "unrecognized_keys"
      ? `unknown field${issue.keys!.length > 1 ? "s" : ""}: ${issue.keys!.join(", ")}`
      : issue.code === "invalid_type"
        ? "must be a JSON object"
        : undefined,
};

/** The name of an application, proxy, reactor, formula or tenant. */
export const Name = z
  .string({ error: "is required" })
  .trim()
  .min(1, "must not be empty")
  .max(NAME_MAX_LENGTH, `must be at most ${NAME_MAX_LENGTH} characters`);

/** `*` is the only wildcard of name filters; everything else matches literally, case-insensitively. */
export const NameFilter = z.string().min(1).max(NAME_MAX_LENGTH).optional();

export const PaginationSchema = z
  .object({
    total_items: z.number().int(),
    page_number: z.number().int(),
    page_size: z.number().int(),
    total_pages: z.number().int(),
  })
  .openapi("Pagination");

export const paginated = <T extends z.ZodType>(item: T) => z.object({ pagination: PaginationSchema, data: z.array(item) });

export type Page<T> = { pagination: z.infer<typeof PaginationSchema>; data: T[] };

export const CursorPaginationSchema = z
  .object({
    page_size: z.number().int(),
    next: z.string().optional().openapi({ description: "Pass it as `start` for the next page; absent on the last page" }),
  })
  .openapi("CursorPagination");

export const cursorPaginated = <T extends z.ZodType>(item: T) => z.object({ pagination: CursorPaginationSchema, data: z.array(item) });

export type CursorPage<T> = { pagination: z.infer<typeof CursorPaginationSchema>; data: T[] };

/** A cursor page: `next` only when another page follows. */
export function cursorPageOf<T>(data: T[], size: number, next: string | undefined): CursorPage<T> {
  return { pagination: { page_size: size, ...(next === undefined ? {} : { next }) }, data };
}

/** The query of a resource list: a page, optionally of some ids, optionally by name. */
export const ListQuery = PageQuery.extend({ id: repeatable(Uuid), name: NameFilter });
export type ListFilter = z.infer<typeof ListQuery>;

export function pageOf<T>(data: T[], totalItems: number, page: number, size: number): Page<T> {
  return {
    pagination: {
      total_items: totalItems,
      page_number: page,
      page_size: size,
      total_pages: Math.ceil(totalItems / size),
    },
    data,
  };
}

/** Standard error responses every authenticated route documents. */
export const problemResponses = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: PROBLEM_DESCRIPTIONS[status] ?? "Error", content: { "application/problem+json": { schema: ProblemSchema } } },
    ]),
  );

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: "Invalid request",
  401: "Missing or invalid API key",
  403: "Missing permission, or a public key called from a browser origin its application does not allow",
  404: "Not found (also for other tenants' objects)",
  409: "Conflict",
  413: "Body too large",
  415: "Unsupported content type",
  429: "Too many requests with this API key (or with this public key from this address): nothing was done; retry after Retry-After",
  503: "The tenant is being moved to another database (or a write reached it too late): nothing was written; retry after Retry-After",
};

/** A required JSON body, with an example the API reference page shows (and fills in for "Try it out"). */
export const jsonBody = <T extends z.ZodType>(schema: T, example?: z.input<T>) => ({
  body: { required: true, content: { "application/json": { schema, ...(example === undefined ? {} : { example }) } } },
});

/** A JSON body the request may leave out altogether (the route then sees `{}`). */
export const optionalJsonBody = <T extends z.ZodType>(schema: T, example?: z.input<T>) => ({
  body: { required: false, content: { "application/json": { schema, ...(example === undefined ? {} : { example }) } } },
});

/** PATCH bodies are JSON merge patches (RFC 7396). */
export const mergePatchBody = <T extends z.ZodType>(schema: T, example?: z.input<T>) => ({
  body: { required: true, content: { "application/merge-patch+json": { schema, ...(example === undefined ? {} : { example }) } } },
});

export const jsonContent = <T extends z.ZodType>(schema: T, description: string, example?: z.output<T>) => ({
  description,
  content: { "application/json": { schema, ...(example === undefined ? {} : { example }) } },
});

export function isoTime(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** The audit members every resource returns: who created and last modified it, and when. */
export function auditFieldsOf(row: { createdBy: string | null; createdAt: number; modifiedBy: string | null; modifiedAt: number | null }) {
  return {
    created_by: row.createdBy,
    created_at: isoTime(row.createdAt)!,
    modified_by: row.modifiedBy,
    modified_at: isoTime(row.modifiedAt),
  };
}

/**
 * A body of one of two shapes, told apart by whether it holds `member` (POST /tokens: a create request,
 * or with `token_intent_id` a conversion). It is validated against the shape the member picks, and only
 * that shape's errors are reported: a plain union would report both shapes' for one typo. The document
 * shows both shapes (oneOf).
 */
export function eitherByMember<With extends z.ZodType, Without extends z.ZodType>(member: string, withMember: With, without: Without) {
  return z.preprocess(
    (body, ctx) => {
      const shape = typeof body === "object" && body !== null && Object.hasOwn(body, member) ? withMember : without;
      const parsed = shape.safeParse(body);
      if (!parsed.success) {
        for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
      }
      return body;
    },
    z.union([withMember, without]),
  );
}
