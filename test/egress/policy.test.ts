import { describe, expect, inject, it } from "vitest";
import { EgressRefusedError, EgressTimeoutError, egressRefusal, fetchThroughEgress } from "../../src/egress/policy";

const strict = { allowInsecure: false };
const development = { allowInsecure: true };

async function seenByLoopback(marker: string): Promise<number> {
  const reply = await fetch(`${inject("loopbackUrl")}/__seen?marker=${marker}`);
  return (await reply.json<{ count: number }>()).count;
}

describe("egress policy: what may leave the vault", () => {
  it.each([
    ["https://api.example.com/charge"],
    ["https://api.example.com:8443/charge?x=1"],
    ["https://8.8.8.8/"],
    ["https://[2606:4700:4700::1111]/"],
    ["https://api.example.com./"],
  ])("allows public HTTPS: %s", (url) => {
    expect(egressRefusal(url, strict)).toBeNull();
  });

  it.each([
    ["http://api.example.com/", "only HTTPS"],
    ["ftp://api.example.com/", "scheme ftp:"],
    ["file:///etc/passwd", "scheme file:"],
    ["data:text/plain,hello", "scheme data:"],
    ["javascript:alert(1)", "scheme javascript:"],
    ["https://user:secret@api.example.com/", "credentials"],
    ["https://user@api.example.com/", "credentials"],
    ["not a url", "not a valid absolute URL"],
    ["/relative/path", "not a valid absolute URL"],
  ])("refuses other schemes, credentials and malformed URLs: %s", (url, reason) => {
    expect(egressRefusal(url, strict)).toContain(reason);
  });

  it.each([
    ["https://0.0.0.0/", "unspecified"],
    ["https://0.1.2.3/", "unspecified"],
    ["https://10.0.0.1/", "private"],
    ["https://10.255.255.255/", "private"],
    ["https://100.64.0.1/", "CGNAT"],
    ["https://100.127.255.254/", "CGNAT"],
    ["https://127.0.0.1/", "loopback"],
    ["https://127.255.0.9/", "loopback"],
    ["https://169.254.169.254/latest/meta-data/", "link-local"],
    ["https://172.16.0.1/", "private"],
    ["https://172.31.255.255/", "private"],
    ["https://192.0.0.8/", "reserved"],
    ["https://192.0.2.1/", "documentation"],
    ["https://192.88.99.1/", "reserved"],
    ["https://192.168.1.1/", "private"],
    ["https://198.18.0.1/", "reserved"],
    ["https://198.51.100.7/", "documentation"],
    ["https://203.0.113.9/", "documentation"],
    ["https://224.0.0.1/", "multicast"],
    ["https://239.255.255.250/", "multicast"],
    ["https://240.0.0.1/", "reserved"],
    ["https://255.255.255.255/", "reserved"],
  ])("refuses IPv4 literals outside the public internet: %s", (url, reason) => {
    expect(egressRefusal(url, strict)).toContain(reason);
  });

  it.each([
    ["https://2852039166/", "link-local"],
    ["https://2130706433/", "loopback"],
    ["https://0xa9fea9fe/", "link-local"],
    ["https://0x7f000001/", "loopback"],
    ["https://0251.0376.0251.0376/", "link-local"],
    ["https://0177.0.0.1/", "loopback"],
    ["https://0x7f.1/", "loopback"],
    ["https://127.1/", "loopback"],
    ["https://10.1/", "private"],
    ["https://127.0.0.1./", "loopback"],
  ])("refuses decimal, octal, hex and short IPv4 forms: %s", (url, reason) => {
    expect(egressRefusal(url, strict)).toContain(reason);
  });

  it.each([
    ["https://[::1]/", "loopback"],
    ["https://[::]/", "unspecified"],
    ["https://[fd00::1]/", "unique local"],
    ["https://[fc00::1]/", "unique local"],
    ["https://[fe80::1]/", "link-local"],
    ["https://[ff02::1]/", "multicast"],
    ["https://[2001:db8::1]/", "documentation"],
    ["https://[3fff::1]/", "documentation"],
    ["https://[100::1]/", "reserved"],
  ])("refuses IPv6 literals outside the public internet: %s", (url, reason) => {
    expect(egressRefusal(url, strict)).toContain(reason);
  });

  it.each([
    ["https://[::ffff:a9fe:a9fe]/", "IPv4-mapped"],
    ["https://[::ffff:169.254.169.254]/", "IPv4-mapped"],
    ["https://[::ffff:127.0.0.1]/", "IPv4-mapped"],
    ["https://[::ffff:8.8.8.8]/", "IPv4-mapped"],
    ["https://[64:ff9b::a9fe:a9fe]/", "NAT64"],
    ["https://[64:ff9b:1::a9fe:a9fe]/", "reserved"],
    ["https://[2002:a9fe:a9fe::]/", "6to4"],
    ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "may embed an IPv4"],
    ["https://[::127.0.0.1]/", "IPv4-compatible"],
  ])("refuses IPv6 literals that embed an IPv4 address: %s", (url, reason) => {
    expect(egressRefusal(url, strict)).toContain(reason);
  });

  it.each([
    ["https://localhost/", "loopback name"],
    ["https://LOCALHOST:8443/", "loopback name"],
    ["https://localhost./", "loopback name"],
    ["https://api.localhost/", ".localhost"],
    ["https://a.b.localhost/", ".localhost"],
    ["https://printer.local/", ".local"],
    ["https://metadata.google.internal/", ".internal"],
    ["https://router.home.arpa/", ".home.arpa"],
    ["https://intranet/", "not a fully qualified"],
  ])("refuses localhost, its subdomains and other local names: %s", (url, reason) => {
    expect(egressRefusal(url, strict)).toContain(reason);
  });

  it.each([
    ["http://127.0.0.1:8787/"],
    ["http://localhost:8787/"],
    ["http://api.localhost/"],
    ["http://[::1]:8787/"],
    ["https://127.0.0.1/"],
  ])("the development setting allows loopback: %s", (url) => {
    expect(egressRefusal(url, development)).toBeNull();
  });

  it.each([
    ["http://api.example.com/", "only HTTPS"],
    ["http://10.0.0.1/", "private"],
    ["http://169.254.169.254/", "link-local"],
    ["http://[::ffff:127.0.0.1]/", "IPv4-mapped"],
    ["http://[fd00::1]/", "unique local"],
    ["http://user:pw@127.0.0.1/", "credentials"],
  ])("the development setting still refuses everything but loopback: %s", (url, reason) => {
    expect(egressRefusal(url, development)).toContain(reason);
  });
});

describe("egress fetch", () => {
  it("a refused destination throws EgressRefusedError (403) and sends nothing", async () => {
    const marker = `refused-${crypto.randomUUID()}`;
    const attempt = fetchThroughEgress(new Request(`${inject("loopbackUrl")}/${marker}`), { ...strict, timeoutMs: 1000 });
    await expect(attempt).rejects.toBeInstanceOf(EgressRefusedError);
    await expect(attempt).rejects.toMatchObject({ status: 403, message: expect.stringContaining("loopback") });
    expect(await seenByLoopback(marker)).toBe(0);
  });

  it("an allowed destination receives the request as sent", async () => {
    const request = new Request(`${inject("loopbackUrl")}/echo`, {
      method: "POST",
      headers: { "x-test": "yes" },
      body: "hello",
    });
    const response = await fetchThroughEgress(request, { ...development, timeoutMs: 5000 });
    expect(await response.json()).toMatchObject({ method: "POST", path: "/echo", body: "hello", headers: { "x-test": "yes" } });
  });

  it("redirects are returned to the caller, never followed", async () => {
    const marker = `redirect-target-${crypto.randomUUID()}`;
    const target = `${inject("loopbackUrl")}/${marker}`;
    const request = new Request(`${inject("loopbackUrl")}/redirect?to=${encodeURIComponent(target)}`);
    const response = await fetchThroughEgress(request, { ...development, timeoutMs: 5000 });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe(target);
    // The one request carrying the marker is the redirect itself (in its query): the target never saw one.
    expect(await seenByLoopback(marker)).toBe(1);
  });

  it("a destination slower than the limit throws EgressTimeoutError (504)", async () => {
    const request = new Request(`${inject("loopbackUrl")}/slow?ms=2000`);
    const attempt = fetchThroughEgress(request, { ...development, timeoutMs: 100 });
    await expect(attempt).rejects.toBeInstanceOf(EgressTimeoutError);
    await expect(attempt).rejects.toMatchObject({ status: 504 });
  });
});
