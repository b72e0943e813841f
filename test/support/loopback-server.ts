import { createServer, type IncomingMessage, type Server } from "node:http";
import type { TestProject } from "vitest/node";

/**
 * A destination on this machine's loopback interface, started once for the whole run (globalSetup,
 * in Node). It echoes every request as JSON and remembers what it saw, so tests can prove both what
 * a proxy forwarded and that a refused request never arrived.
 *
 *   any path            200 {method, path, query, headers, raw_headers, body}
 *                       (raw_headers: name, value, name, value… as they arrived; Node's headers
 *                       object drops a header named __proto__)
 *   /status/<code>      that status, with the echo as body
 *   /redirect?to=<url>  302 to the url
 *   /slow?ms=<n>        answers after n ms
 *   /respond?<name>=<value>…[&body=<text>]  each parameter but body as a response header; body as given
 *   GET /__seen?marker=<m>  {count} of requests whose path or query contained m
 *   /hooks/<name>[/status/<code>]  a webhook receiver: remembered with headers and body, answered as above
 *   GET /__received?marker=<m>  [{path, headers, body}] of the /hooks/ requests whose path contained m, in arrival order
 */
declare module "vitest" {
  export interface ProvidedContext {
    loopbackUrl: string;
  }
}

const seen: string[] = [];
const received: { path: string; headers: IncomingMessage["headers"]; body: string }[] = [];
let server: Server | undefined;

export default async function setup(project: TestProject) {
  server = createServer(async (request, response) => {
    const url = new URL(request.url ?? "/", "http://loopback");
    if (url.pathname === "/__seen") {
      const marker = url.searchParams.get("marker") ?? "\u0000";
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ count: seen.filter((entry) => entry.includes(marker)).length }));
      return;
    }
    if (url.pathname === "/__received") {
      const marker = url.searchParams.get("marker") ?? "\u0000";
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify(received.filter((entry) => entry.path.includes(marker))));
      return;
    }
    seen.push(`${url.pathname}${url.search}`);
    const body = await readBody(request);
    if (url.pathname.startsWith("/hooks/")) received.push({ path: url.pathname, headers: request.headers, body });
    const echo = {
      method: request.method,
      path: url.pathname,
      query: url.search,
      headers: request.headers,
      raw_headers: request.rawHeaders,
      body,
    };
    if (url.pathname === "/redirect") {
      response.writeHead(302, { location: url.searchParams.get("to") ?? "/" });
      response.end();
      return;
    }
    if (url.pathname === "/respond") {
      const headers = [...url.searchParams].filter(([name]) => name !== "body");
      response.writeHead(200, Object.fromEntries(headers));
      response.end(url.searchParams.get("body") ?? JSON.stringify(echo));
      return;
    }
    if (url.pathname === "/slow") await new Promise((resolve) => setTimeout(resolve, Number(url.searchParams.get("ms") ?? 0)));
    const status = /^(?:\/hooks\/[^/]+)?\/status\/(\d{3})$/.exec(url.pathname)?.[1];
    response.writeHead(status ? Number(status) : 200, { "content-type": "application/json", "x-echo": "true" });
    response.end(JSON.stringify(echo));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("loopback server has no port");
  project.provide("loopbackUrl", `http://127.0.0.1:${address.port}`);
  return async () => {
    await new Promise((resolve) => server?.close(resolve));
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}
