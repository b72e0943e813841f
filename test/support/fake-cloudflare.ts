import { env } from "cloudflare:test";
import { vi } from "vitest";
import { OUTBOUND_PARAMETER } from "../../src/egress/outbound";
import type { Bindings } from "../../src/env";
import type { DispatchedScript } from "./fake-namespace-worker";

/** Where the fake Cloudflare API answers; nothing is ever sent there for real. */
export const FAKE_API_BASE = "https://api.cloudflare.test/client/v4";

export interface ApiCall {
  method: string;
  url: string;
  authorization: string | null;
  contentType: string | null;
  /** The multipart parts of an upload: name, content type and text. */
  parts: { name: string; type: string; text: string }[];
}

export interface FakeCloudflare {
  /** Every call the vault made to the API, in order. */
  calls: ApiCall[];
  /** Every `get` on the dispatch namespace: script name and options. */
  dispatches: { name: string; options: DynamicDispatchOptions | undefined }[];
  /** The next API call (on the script named `script`, when given) answers with this status and these error messages instead. */
  failNext(status: number, messages: string[], script?: string): void;
  /** Every API call on a script `refused` names answers with this status and these error messages, from now on. */
  failAlways(status: number, messages: string[], refused: (script: string) => boolean): void;
  /**
   * The next API call is carried out, but its answer waits for `release`: `arrived` settles once the
   * call was carried out (an upload stored, a script deleted).
   */
  holdNext(): { arrived: Promise<void>; release(): void };
  /** The names of the scripts the namespace holds now. */
  storedScripts(): string[];
  /** The vault's environment with the dispatch host configured against the fakes. */
  env: Bindings;
}

type StoredScript = Omit<DispatchedScript, "outbound">;

const MODULE_KINDS: Record<string, keyof WorkerLoaderModule> = {
  "application/javascript+module": "js",
  "application/javascript": "cjs",
};

export interface FakeNamespaceOptions {
  /**
   * The parameters the DISPATCHER binding's outbound worker declares (`outbound = { service,
   * parameters }` in wrangler.toml), or null for a binding without an outbound worker. By default
   * it is bound as docs/proxies.md ("Sandbox") says.
   */
  outboundParameters?: string[] | null;
}

/**
 * There is no Cloudflare account or dispatch namespace here. The fake API stores uploaded scripts
 * (global fetch is intercepted for FAKE_API_BASE only); the fake namespace (fake-namespace-worker.ts,
 * a worker of its own) runs a stored script as the real namespace would: its fetches go to the
 * outbound worker's own code with the declared parameters `DISPATCHER.get` passed as its env, or
 * straight to the network when the binding has no outbound worker.
 */
export function fakeCloudflare(options: FakeNamespaceOptions = {}): FakeCloudflare {
  const outboundParameters = options.outboundParameters === undefined ? [OUTBOUND_PARAMETER] : options.outboundParameters;
  const calls: ApiCall[] = [];
  const dispatches: FakeCloudflare["dispatches"] = [];
  const scripts = new Map<string, StoredScript>();
  let failure: { status: number; messages: string[]; script?: string } | null = null;
  let standing: { status: number; messages: string[]; refused: (script: string) => boolean } | null = null;
  let hold: { arrived: () => void; released: Promise<void> } | null = null;
  let generation = 0;
  const realFetch = globalThis.fetch;

  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    if (!request.url.startsWith(FAKE_API_BASE)) return realFetch(request);
    const contentType = request.headers.get("content-type");
    const parts: ApiCall["parts"] = [];
    if (contentType?.startsWith("multipart/form-data")) {
      for (const [name, value] of await request.formData()) {
        const entry = value as string | File;
        parts.push(typeof entry === "string" ? { name, type: "", text: entry } : { name, type: entry.type, text: await entry.text() });
      }
    }
    calls.push({ method: request.method, url: request.url, authorization: request.headers.get("authorization"), contentType, parts });
    if (failure && (failure.script === undefined || request.url.endsWith(`/${failure.script}`))) {
      const { status, messages } = failure;
      failure = null;
      return Response.json({ success: false, errors: messages.map((message, code) => ({ code, message })) }, { status });
    }
    if (standing?.refused(request.url.split("/").at(-1)!)) {
      const { status, messages } = standing;
      return Response.json({ success: false, errors: messages.map((message, code) => ({ code, message })) }, { status });
    }
    const held = hold;
    hold = null;
    const answer = carryOut(request.method, request.url.split("/").at(-1)!, parts);
    if (held) {
      held.arrived();
      await held.released;
    }
    return answer;
  });

  function carryOut(method: string, name: string, parts: ApiCall["parts"]): Response {
    if (method === "DELETE") {
      const existed = scripts.delete(name);
      return Response.json(
        { success: existed, errors: existed ? [] : [{ code: 10007, message: "script not found" }] },
        { status: existed ? 200 : 404 },
      );
    }
    const metadata = JSON.parse(parts.find((part) => part.name === "metadata")!.text) as StoredScript["metadata"];
    const modules = Object.fromEntries(
      parts.filter((part) => part.name !== "metadata").map((part) => [part.name, { [MODULE_KINDS[part.type]!]: part.text }]),
    );
    generation += 1;
    scripts.set(name, { id: `${name}-${generation}`, metadata, modules });
    return Response.json({ success: true, errors: [], result: { id: name } });
  }

  const dispatcher = {
    get(name: string, _args: unknown, getOptions?: DynamicDispatchOptions) {
      dispatches.push({ name, options: getOptions });
      const stored = scripts.get(name);
      if (!stored) {
        const missing = () => Promise.reject(new Error(`Worker not found: ${name}`));
        return { run: missing, checkEgress: missing };
      }
      const passed: Record<string, unknown> = getOptions?.outbound ?? {};
      const script: DispatchedScript = {
        ...stored,
        outbound:
          outboundParameters && Object.fromEntries(outboundParameters.filter((key) => key in passed).map((key) => [key, passed[key]])),
      };
      return {
        run(inputJson: string, bridge: Fetcher | null) {
          if (bridge) return Promise.reject(new Error("The fake dispatch namespace cannot pass the bridge to a user worker"));
          return env.FAKE_NAMESPACE.run(script, inputJson);
        },
        checkEgress: (url: string) => env.FAKE_NAMESPACE.checkEgress(script, url),
      };
    },
  };

  return {
    calls,
    dispatches,
    failNext(status, messages, script) {
      failure = { status, messages, script };
    },
    failAlways(status, messages, refused) {
      standing = { status, messages, refused };
    },
    holdNext() {
      let arrived!: () => void;
      let release!: () => void;
      const arrival = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      hold = { arrived, released: new Promise<void>((resolve) => (release = resolve)) };
      return { arrived: arrival, release };
    },
    storedScripts: () => [...scripts.keys()],
    env: {
      ...env,
      SANDBOX_HOST: "dispatch",
      CLOUDFLARE_ACCOUNT_ID: "account-1234",
      CLOUDFLARE_API_TOKEN: "cloudflare-api-token-for-tests",
      CLOUDFLARE_API_BASE: FAKE_API_BASE,
      DISPATCH_NAMESPACE: "tenant-scripts",
      DISPATCHER: dispatcher as unknown as DispatchNamespace,
    } as Bindings,
  };
}
