import { createRouter } from "../http/router";

/** POST|GET|PUT|DELETE /webhooks: filled in by the webhooks change. */
export const webhookRoutes = createRouter();
