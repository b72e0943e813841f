import { describe, expect, it } from "vitest";
import { expectLoggedError } from "../support/logs";
import { codeReactorRunning, react } from "../support/reactors";

/*
 * Tenant code answering on the vault's origin: a reactor that throws CustomHttpResponseError chooses
 * the status, headers and body of POST /reactors/{id}/react's answer. That answer is the vault's
 * origin, the console's: it must not plant or replace the console's session cookie (the reactor's
 * tenant's own session, with the visitor then typing into that tenant), and a page it answers must
 * run no script there (docs/security.md, "9. The console's sessions").
 */

describe("a reactor's CustomHttpResponseError answers on the vault's origin", () => {
  it("cannot set the console's session cookie, and its page runs sandboxed", async () => {
    for (const setter of [
      "svc_console=console_planted; Path=/",
      "=svc_console=console_planted; Path=/",
      "__Host-svc_console=console_planted; Path=/; Secure",
    ]) {
      const code = `const { CustomHttpResponseError } = require("@token-vault/errors");
        module.exports = async () => {
          throw new CustomHttpResponseError({
            status: 299,
            headers: { "set-cookie": ${JSON.stringify(setter)}, "content-type": "text/html" },
            body: "<script>document.title = 'ran on the vault origin'</script>",
          });
        };`;
      const { reactor, caller } = await codeReactorRunning(code);
      const reply = await react(caller.key, reactor.id, {});
      expect(reply.status, reply.text).toBe(299);
      expect(reply.headers.get("set-cookie") ?? "", setter).not.toMatch(/svc_console/i);
      expect(reply.headers.get("content-security-policy") ?? "").toMatch(/\bsandbox\b/);
    }
  });

  it("one with a header HTTP does not allow is the reactor's Invalid Script Result, not an answer the vault fails to build", async () => {
    const code = `const { CustomHttpResponseError } = require("@token-vault/errors");
      module.exports = async () => {
        throw new CustomHttpResponseError({ status: 402, headers: { "bad name": "x" }, body: {} });
      };`;
    const { reactor, caller } = await codeReactorRunning(code);
    const reply = await expectLoggedError(/CustomHttpResponseError/, () => react(caller.key, reactor.id, {}));
    expect(reply.status, reply.text).toBe(500);
    expect(reply.body.title).toBe("Invalid Script Result");
  });
});
