/**
 * Apple Pay's servers, reached only through the deployment's APPLE_PAY_GATEWAY binding (an mTLS
 * certificate binding that presents the vault's merchant identity certificate), and only at the hosts
 * Apple publishes for Apple Pay on the web: the certificate must never be presented anywhere else.
 */
import type { RequestContext } from "../context";
import { ProblemError } from "../errors";
import { readBounded } from "../http/body";
import { APPLE_PAY_WEB } from "../limits";

/**
 * The hosts Apple lists for merchant validation and its web merchant registration API (production,
 * China, their pods, and the sandbox): a session's `validation_url` must name one of them.
 */
export const APPLE_PAY_GATEWAY_HOSTS: readonly string[] = [
  "apple-pay-gateway.apple.com",
  "cn-apple-pay-gateway.apple.com",
  ...[1, 2, 3, 4, 5].map((pod) => `apple-pay-gateway-nc-pod${pod}.apple.com`),
  ...[1, 2, 3, 4, 5].map((pod) => `apple-pay-gateway-pr-pod${pod}.apple.com`),
  ...[1, 2, 3].map((pod) => `cn-apple-pay-gateway-sh-pod${pod}.apple.com`),
  ...[1, 2, 3].map((pod) => `cn-apple-pay-gateway-tj-pod${pod}.apple.com`),
  "apple-pay-gateway-cert.apple.com",
  "cn-apple-pay-gateway-cert.apple.com",
];

/** The paths of Apple's merchant session endpoints (the current one and the one older pages still receive). */
const SESSION_PATHS = ["/paymentservices/paymentSession", "/paymentservices/startSession"];

/** Where a session is requested when the caller names no validation URL (the docs' default). */
export const DEFAULT_VALIDATION_URL = "https://apple-pay-gateway.apple.com/paymentservices/paymentSession";

export const VALIDATION_URL_RULE =
  "must be https:// on one of Apple's Apple Pay gateway hosts, at /paymentservices/paymentSession or /startSession, " +
  "with no credentials, port, query or fragment";

/** The validation URL when it is one of Apple's session endpoints, else null: nothing is sent anywhere else. */
export function validationUrlOf(text: string): URL | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const plain = url.protocol === "https:" && url.username === "" && url.password === "" && url.port === "";
  const apple = APPLE_PAY_GATEWAY_HOSTS.includes(url.hostname) && SESSION_PATHS.includes(url.pathname);
  return plain && apple && url.search === "" && url.hash === "" ? url : null;
}

/** Apple's web merchant registration endpoints, in production or (APPLE_PAY_SANDBOX) the sandbox. */
export function registrationUrlOf(context: RequestContext, operation: "registerMerchant" | "unregisterMerchant"): URL {
  const host = context.config.APPLE_PAY_SANDBOX ? "apple-pay-gateway-cert.apple.com" : "apple-pay-gateway.apple.com";
  return new URL(`https://${host}/paymentservices/${operation}`);
}

/** The deployment binds no gateway (npm start, or production without the certificate binding). */
export class ApplePayGatewayMissingError extends ProblemError {
  constructor() {
    super(
      503,
      "Service Unavailable",
      "This deployment has no Apple Pay gateway configured (the APPLE_PAY_GATEWAY mTLS certificate binding): " +
        "Apple Pay domain registration and merchant sessions are unavailable",
    );
  }
}

/** Apple refused the request: its own words are not repeated (they may carry what another party sent it). */
export class ApplePayRefusedError extends ProblemError {
  constructor(what: string, appleStatus: number) {
    super(422, "Unprocessable Entity", `Apple refused the ${what} (Apple answered ${appleStatus})`);
  }
}

/** Apple's servers did not answer usably: nothing was recorded. */
export class ApplePayGatewayError extends ProblemError {
  constructor(what: string, reason: string) {
    super(502, "Bad Gateway", `Apple Pay's gateway gave no usable answer to the ${what}: ${reason}; nothing was recorded`);
  }
}

export function requireGateway(context: RequestContext): Fetcher {
  const gateway = context.applePayGateway;
  if (!gateway) throw new ApplePayGatewayMissingError();
  return gateway;
}

/**
 * POSTs `body` as JSON to Apple at `url` and answers the body of a 200: redirects are not followed,
 * the answer is read within APPLE_PAY_WEB's time and size bounds, and a refusal is a 422.
 */
export async function postToApple(gateway: Fetcher, url: URL, body: unknown, what: string): Promise<string> {
  const timeUp = new Promise<"late">((resolve) => setTimeout(() => resolve("late"), APPLE_PAY_WEB.gatewayTimeoutMs));
  const late = () => new ApplePayGatewayError(what, `no answer within ${APPLE_PAY_WEB.gatewayTimeoutMs / 1000} s`);
  const answer = gateway
    .fetch(url.href, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), redirect: "manual" })
    .catch(() => "unreachable" as const);
  const response = await Promise.race([answer, timeUp]);
  if (response === "late") throw late();
  if (response === "unreachable") throw new ApplePayGatewayError(what, "unreachable");
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    throw new ApplePayGatewayError(what, "it answered with a redirect, which is not followed");
  }
  if (response.status >= 400 && response.status < 500) {
    await response.body?.cancel();
    throw new ApplePayRefusedError(what, response.status);
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new ApplePayGatewayError(what, `it answered ${response.status}`);
  }
  return boundedText(response, what, timeUp, late);
}

/** The body as text, read within the deadline and APPLE_PAY_WEB's size bound. */
async function boundedText(response: Response, what: string, timeUp: Promise<"late">, late: () => ProblemError): Promise<string> {
  if (!response.body) return "";
  const limit = APPLE_PAY_WEB.maxGatewayAnswerBytes;
  const reads = readsWithin(response.body, what, timeUp, late);
  const bytes = await readBounded(reads, limit, () => new ApplePayGatewayError(what, `its answer exceeds ${limit} bytes`));
  return new TextDecoder().decode(bytes);
}

/**
 * The body's chunks, each read raced against `timeUp`. Past it the read is left to the end of the
 * request rather than aborted or cancelled: workerd reports an aborted or cancelled pending read as
 * an unhandled rejection even when it is awaited. A reader that stops between reads (the answer too
 * long) cancels the rest.
 */
async function* readsWithin(
  body: ReadableStream<Uint8Array>,
  what: string,
  timeUp: Promise<"late">,
  late: () => ProblemError,
): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let pending = false;
  try {
    for (;;) {
      pending = true;
      const read = await Promise.race([reader.read().catch(() => "broken" as const), timeUp]);
      if (read === "late") throw late();
      pending = false;
      if (read === "broken") throw new ApplePayGatewayError(what, "its answer broke off");
      if (read.done) return;
      yield read.value;
    }
  } finally {
    if (!pending) await reader.cancel().catch(() => undefined);
  }
}
