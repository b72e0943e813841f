/** The worker: the Hono app for `fetch`, the cron and queue handlers, and the entrypoints tenant code reaches. */
import { buildApp } from "./app";
import type { Bindings } from "./env";
import { queue, scheduled } from "./runtime/handlers";

export { Bridge } from "./runtime/bridge";
export { Egress } from "./runtime/egress";

const app = buildApp();

export default { fetch: app.fetch, scheduled, queue } satisfies ExportedHandler<Bindings>;
