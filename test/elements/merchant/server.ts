import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The merchant's server authorizing a session its page created: `POST /authorize-session {nonce}`
 * answers what the vault answered it (the status, and the problem if any).
 */
export type AuthorizeSession = (nonce: string) => Promise<{ status: number; body: unknown }>;

/**
 * The merchant's site, on a loopback origin of its own (the vault is another): a checkout page that
 * loads its spy script, the vault's elements.js and its checkout code. It keeps every request it
 * receives, so a test can show that none carried a typed value.
 */
export async function startMerchant(vaultUrl: string, authorizeSession?: AuthorizeSession) {
  const received: string[] = [];
  const folder = dirname(fileURLToPath(import.meta.url));
  const scripts: Record<string, string> = {
    "/spy.js": readFileSync(join(folder, "spy.js"), "utf8"),
    "/checkout.js": readFileSync(join(folder, "checkout.js"), "utf8"),
  };
  const page = `<!doctype html>
<html lang="en">
  <head><meta charset="utf-8" /><title>Merchant checkout</title></head>
  <body>
    <h1>Checkout</h1>
    <script src="/spy.js"></script>
    <script src="${vaultUrl}/elements/v1/elements.js"></script>
    <script src="/checkout.js"></script>
  </body>
</html>`;
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      received.push(`${request.method} ${request.url} ${JSON.stringify(request.headers)} ${body}`);
      const script = scripts[request.url ?? ""];
      if (request.method === "POST" && request.url === "/authorize-session" && authorizeSession) {
        const { nonce } = JSON.parse(body || "{}") as { nonce?: string };
        authorizeSession(String(nonce)).then(({ status, body: answer }) => {
          response.statusCode = status;
          response.setHeader("content-type", "application/json");
          response.end(JSON.stringify(answer ?? null));
        });
      } else if (request.url === "/") {
        response.setHeader("content-type", "text/html; charset=utf-8");
        response.end(page);
      } else if (script) {
        response.setHeader("content-type", "text/javascript; charset=utf-8");
        response.end(script);
      } else {
        response.statusCode = 404;
        response.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  // The vault is reached as 127.0.0.1, the merchant as localhost: two sites, as in production.
  const url = `http://localhost:${(server.address() as AddressInfo).port}`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
