import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS, EXAMPLE_TIME, exampleCreatedBy } from "../http/examples";
import type {
  ApiKeyBody,
  ApplicationKeyResponse,
  ApplicationResponse,
  CreateApplicationBody,
  CreatedApplicationSchema,
  UpdateApplicationBody,
} from "./schema";

/*
 * The example application (EXAMPLE_IDS.application) is the private application that creates the
 * example tokens; a management application of the tenant creates and manages it.
 */

const ADDED_KEY_ID = "f7ddbd78-485b-43c1-aece-c53ac849344e";
const REGENERATED_KEY_ID = "e0616490-6be9-415e-ba42-a5e23e5112da";

const KEY_ADDED_AT = "2026-11-30T09:00:00.000Z";
const KEYS_REGENERATED_AT = "2026-12-07T09:00:00.000Z";

/** Masked for everything a service does with tokens; revealed only to detokenize them for a partner. */
const CHECKOUT_RULES = [
  {
    description: "Tokens stay masked in every answer",
    priority: 10,
    container: "/",
    transform: "mask",
    permissions: ["token:create", "token:read", "token:update", "token:delete", "token:search"],
  },
  {
    description: "Data is revealed only to detokenize it",
    priority: 20,
    container: "/",
    transform: "reveal",
    permissions: ["token:use"],
  },
] satisfies ApplicationResponse["rules"];

export const APPLICATION_REQUEST_EXAMPLE = {
  name: "Checkout service",
  type: "private",
  rules: CHECKOUT_RULES,
} satisfies z.input<typeof CreateApplicationBody>;

/** With rules, `permissions` is the union of the rules' permissions. */
export const APPLICATION_EXAMPLE = {
  id: EXAMPLE_IDS.application,
  tenant_id: EXAMPLE_IDS.tenant,
  name: APPLICATION_REQUEST_EXAMPLE.name,
  type: "private",
  permissions: ["token:create", "token:read", "token:update", "token:delete", "token:search", "token:use"],
  rules: CHECKOUT_RULES,
  allowed_origins: [],
  ...exampleCreatedBy(EXAMPLE_IDS.managementApplication),
} satisfies ApplicationResponse;

const FIRST_KEY = "key_N2nrk4H6FnbEF3vxtVfEtwXyFCtbp7OTiqs9ZfldaHI";

export const CREATED_APPLICATION_EXAMPLE = {
  ...APPLICATION_EXAMPLE,
  key: FIRST_KEY,
  keys: [{ id: EXAMPLE_IDS.apiKey, key: FIRST_KEY, created_at: EXAMPLE_TIME, expires_at: null }],
} satisfies z.output<typeof CreatedApplicationSchema>;

/** The whole application is replaced; `type` may be left out but not changed. */
export const APPLICATION_REPLACEMENT_EXAMPLE = {
  name: APPLICATION_REQUEST_EXAMPLE.name,
  rules: [
    ...CHECKOUT_RULES,
    {
      description: "Bank accounts are none of its business",
      priority: 5,
      container: "/bank/",
      transform: "redact",
      permissions: ["token:read", "token:search"],
    },
  ],
} satisfies z.input<typeof UpdateApplicationBody>;

export const REPLACED_APPLICATION_EXAMPLE = {
  ...APPLICATION_EXAMPLE,
  rules: APPLICATION_REPLACEMENT_EXAMPLE.rules,
  modified_by: EXAMPLE_IDS.managementApplication,
  modified_at: EXAMPLE_TIME,
} satisfies ApplicationResponse;

export const NEW_KEY_REQUEST_EXAMPLE = { expires_at: "2027-11-30T09:00:00Z" } satisfies z.input<typeof ApiKeyBody>;

export const NEW_KEY_EXAMPLE = {
  id: ADDED_KEY_ID,
  key: "key_Kstni9xu_LI_Zu0zCR7xD9GBGVqDvpCZHjhR5N89ftQ",
  created_at: KEY_ADDED_AT,
  expires_at: "2027-11-30T09:00:00.000Z",
} satisfies ApplicationKeyResponse;

/** Newest first, without their plaintext. */
export const APPLICATION_KEYS_EXAMPLE = [
  { id: ADDED_KEY_ID, created_at: KEY_ADDED_AT, expires_at: NEW_KEY_EXAMPLE.expires_at },
  { id: EXAMPLE_IDS.apiKey, created_at: EXAMPLE_TIME, expires_at: null },
] satisfies ApplicationKeyResponse[];

export const REGENERATE_REQUEST_EXAMPLE = { expires_at: "2027-12-07T09:00:00Z" } satisfies z.input<typeof ApiKeyBody>;

const REGENERATED_KEY = "key_JbhmsbvvPGwtXdAGqVoSIvn6WeIozJehWtnUR4tywWI";

/** The application with its one key left: the new one, shown this once. */
export const REGENERATED_APPLICATION_EXAMPLE = {
  ...APPLICATION_EXAMPLE,
  modified_by: EXAMPLE_IDS.managementApplication,
  modified_at: KEYS_REGENERATED_AT,
  key: REGENERATED_KEY,
  keys: [{ id: REGENERATED_KEY_ID, key: REGENERATED_KEY, created_at: KEYS_REGENERATED_AT, expires_at: "2027-12-07T09:00:00.000Z" }],
} satisfies z.output<typeof CreatedApplicationSchema>;
