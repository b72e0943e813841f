import type { Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { toBase64 } from "../crypto/encoding";
import { pageAfter, positionOf } from "../db/cursors";
import { egressRefusal } from "../egress/policy";
import { ConflictError, NotFoundError, ValidationError } from "../errors";
import { auditFieldsOf, type CursorPage, cursorPageOf, isoTime, type Page, pageOf } from "../http/schemas";
import { WEBHOOKS } from "../limits";
import type { WebhookDeliveryResponse, WebhookInput, WebhookListRequest, WebhookResponse } from "./schema";
import type { WebhookRow } from "./storage";
import * as storage from "./storage";

/** Additional data of the secret's ciphertext: a ciphertext moved to another webhook fails to decrypt. */
export const secretContext = (id: string) => `webhooks/${id}/secret`;

function toWebhookResponse(row: WebhookRow): WebhookResponse {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    name: row.name,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    status: row.status,
    notify_email: row.notifyEmail,
    ...auditFieldsOf(row),
  };
}

function checkUrl(context: TenantContext, url: string): void {
  const refusal = egressRefusal(url, { allowInsecure: context.config.ALLOW_INSECURE_DESTINATIONS });
  if (refusal !== null) throw ValidationError.field("url", `is refused by the egress policy: ${refusal}`);
}

/**
 * Creates the webhook with a new signing secret, which only this answer shows; the vault keeps it
 * encrypted under the tenant key. A tenant holds at most WEBHOOKS.maxPerTenant webhooks (409).
 */
export async function createWebhook(context: TenantContext, principal: Principal, input: WebhookInput) {
  checkUrl(context, input.url);
  const id = crypto.randomUUID();
  const secret = `whsec_${toBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
  const keys = await context.keys();
  const row: WebhookRow = {
    id,
    tenantId: principal.tenantId,
    name: input.name,
    url: input.url,
    events: JSON.stringify(input.events),
    status: input.status,
    notifyEmail: input.notify_email ?? null,
    secretCiphertext: await keys.encrypt(secret, secretContext(id)),
    consecutiveFailures: 0,
    createdBy: principal.applicationId,
    createdAt: Date.now(),
    modifiedBy: null,
    modifiedAt: null,
  };
  const inserted = await context.withControlMark({ id }, (mark) =>
    storage.insertWebhook(context.control, row, WEBHOOKS.maxPerTenant, mark),
  );
  if (!inserted) throw new ConflictError(`A tenant holds at most ${WEBHOOKS.maxPerTenant} webhooks; delete one first`);
  context.audit.describe({ entityId: id });
  return { ...toWebhookResponse(row), secret };
}

/**
 * The answer to a POST /webhooks whose write was committed and whose answer was never saved: the
 * webhook as it was created, with its signing secret; a 409 when it no longer exists (deleted since,
 * or never inserted: the tenant held its most webhooks, which the first attempt answered), or was
 * replaced since: that is for a read (webhook:read) to show.
 */
export const answerCommittedCreate = async (context: TenantContext, _principal: Principal, outcome: unknown) => {
  const { id } = outcome as { id: string };
  const row = await storage.findWebhook(context.control, context.tenantId, id);
  if (!row)
    throw ConflictError.processed("its webhook is not there: deleted since, or never made because the tenant held its most webhooks");
  if (row.modifiedAt !== null) {
    throw ConflictError.processed("the webhook it created was changed since: read it");
  }
  const secret = await (await context.keys()).decrypt(row.secretCiphertext, secretContext(id));
  context.audit.describe({ entityId: id });
  return { status: 201, body: { ...toWebhookResponse(row), secret } };
};

export async function getWebhook(context: TenantContext, _principal: Principal, id: string): Promise<WebhookResponse> {
  const row = await storage.findWebhook(context.control, context.tenantId, id);
  if (!row) throw new NotFoundError(`Webhook ${id}`);
  return toWebhookResponse(row);
}

/** The webhook's kept deliveries, newest first: what became of each event, never its payload. */
export async function webhookDeliveries(context: TenantContext, id: string): Promise<{ data: WebhookDeliveryResponse[] }> {
  if (!(await storage.findWebhook(context.control, context.tenantId, id))) throw new NotFoundError(`Webhook ${id}`);
  const rows = await storage.deliveriesOf(context.control, context.tenantId, id, WEBHOOKS.deliveriesKept);
  return {
    data: rows.map((row) => ({
      event_id: row.eventId,
      event_type: row.eventType,
      status: row.status,
      attempts: row.attempts,
      last_outcome: row.lastOutcome,
      first_attempt_at: isoTime(row.firstAttemptAt)!,
      last_attempt_at: isoTime(row.lastAttemptAt)!,
    })),
  };
}

/**
 * The tenant's webhooks, newest first: with `page`, a page by number in the vault's list shape;
 * otherwise a page by cursor, the shape the original interface's webhook list has (its Node SDK
 * reads `pagination.page_size` and `next`). The cursor is bound to the filters and the key's application.
 */
export async function listWebhooks(
  context: TenantContext,
  principal: Principal,
  query: WebhookListRequest,
): Promise<Page<WebhookResponse> | CursorPage<WebhookResponse>> {
  if (query.page !== undefined) {
    const filter = { ...query, page: query.page };
    const { rows, total } = await storage.webhooksPage(context.control, context.tenantId, filter);
    return pageOf(rows.map(toWebhookResponse), total, filter.page, filter.size);
  }
  const keys = await context.keys();
  const request = { id: [...new Set(query.id)].sort(), name: query.name ?? null };
  const binding = { list: "GET /webhooks", applicationId: principal.applicationId, request };
  const after = query.start ? await positionOf(keys, binding, query.start) : null;
  const rows = await storage.webhooksAfter(context.control, context.tenantId, query, after, query.size + 1);
  const { page, next } = await pageAfter(keys, binding, rows, query.size);
  return cursorPageOf(page.map(toWebhookResponse), query.size, next);
}

/** Replaces every field but the secret; `status: enabled` re-enables a webhook disabled after failures. */
export async function replaceWebhook(context: TenantContext, principal: Principal, id: string, input: WebhookInput) {
  checkUrl(context, input.url);
  const row = await storage.updateWebhook(context.control, context.tenantId, id, {
    name: input.name,
    url: input.url,
    events: JSON.stringify(input.events),
    status: input.status,
    notifyEmail: input.notify_email ?? null,
    modifiedBy: principal.applicationId,
    modifiedAt: Date.now(),
  });
  if (!row) throw new NotFoundError(`Webhook ${id}`);
  return toWebhookResponse(row);
}

export async function deleteWebhook(context: TenantContext, _principal: Principal, id: string): Promise<void> {
  if (!(await storage.deleteWebhook(context.control, context.tenantId, id))) throw new NotFoundError(`Webhook ${id}`);
}
