import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS, exampleChangedBy, exampleCreatedBy } from "../http/examples";
import type { ProxyBody, ProxyPatchBody, ProxyResponse, RollKeyBody } from "./schema";

/** Adds the partner's credential, kept in the proxy's encrypted configuration, to every forwarded request. */
const ADD_PARTNER_TOKEN = {
  code: 'module.exports = async function (req) {\n  return { headers: { ...req.args.headers, authorization: "Bearer " + req.configuration.PARTNER_TOKEN }, body: req.args.body };\n};',
};

/** Leaves the card the partner echoes out of the response the caller gets. */
const DROP_ECHOED_CARD = {
  code: "module.exports = async function (req) {\n  const { card, ...charge } = req.args.body;\n  return { headers: req.args.headers, body: charge };\n};",
};

/** Sent to the vault by test/foundation/platform.test.ts: it must stay a proxy the vault accepts. */
export const PROXY_REQUEST_EXAMPLE = {
  name: "Payments partner",
  destination_url: "https://api.partner.example/charges",
  request_transform: ADD_PARTNER_TOKEN,
  configuration: { PARTNER_TOKEN: "partner-secret" },
  require_auth: true,
} satisfies z.input<typeof ProxyBody>;

/** The proxy PROXY_REQUEST_EXAMPLE creates: the vault adds the key, and reads answer the configuration decrypted. */
export const PROXY_EXAMPLE = {
  id: EXAMPLE_IDS.proxy,
  tenant_id: EXAMPLE_IDS.tenant,
  name: PROXY_REQUEST_EXAMPLE.name,
  key: "proxy_v0EycMHcwKlToFSJX-lsxhvYrhbQl_z0LF77RInFcM8",
  destination_url: PROXY_REQUEST_EXAMPLE.destination_url,
  request_transform: ADD_PARTNER_TOKEN,
  response_transform: null,
  application_id: null,
  configuration: PROXY_REQUEST_EXAMPLE.configuration,
  require_auth: true,
  ...exampleCreatedBy(EXAMPLE_IDS.managementApplication),
} satisfies ProxyResponse;

export const PROXY_REPLACEMENT_EXAMPLE = {
  ...PROXY_REQUEST_EXAMPLE,
  response_transform: DROP_ECHOED_CARD,
  configuration: { PARTNER_TOKEN: "partner-secret-2" },
} satisfies z.input<typeof ProxyBody>;

/** The proxy after PROXY_REPLACEMENT_EXAMPLE: same id and key. */
export const REPLACED_PROXY_EXAMPLE = {
  ...PROXY_EXAMPLE,
  response_transform: DROP_ECHOED_CARD,
  configuration: PROXY_REPLACEMENT_EXAMPLE.configuration,
  ...exampleChangedBy(EXAMPLE_IDS.managementApplication),
} satisfies ProxyResponse;

export const PROXY_PATCH_EXAMPLE = {
  destination_url: "https://api.partner.example/v2/charges",
  configuration: { PARTNER_TOKEN: "partner-secret-2" },
} satisfies z.input<typeof ProxyPatchBody>;

export const ROLL_KEY_EXAMPLE = { grace_period_seconds: 86400 } satisfies z.input<typeof RollKeyBody>;

export const ROLLED_PROXY_EXAMPLE = {
  ...PROXY_EXAMPLE,
  key: "proxy_zqLzGDsqzdMaoqj0hrBxXeMuZaTzJ0ui-QJGR17HmEg",
  ...exampleChangedBy(EXAMPLE_IDS.managementApplication),
} satisfies ProxyResponse;

/** How /proxy answers a failure inside the vault; test/foundation/platform.test.ts checks its status and title. */
export const PROXY_ERROR_EXAMPLE = {
  proxy_error: {
    type: "about:blank",
    title: "Bad Request",
    status: 400,
    detail: `Token ${EXAMPLE_IDS.token} does not exist or has expired`,
  },
};
