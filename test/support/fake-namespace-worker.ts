/**
 * A worker beside the vault in the tests (vitest.config.ts bundles it with the outbound worker's
 * own code): the fake Workers for Platforms dispatch namespace. It runs each user worker in a
 * Worker Loader isolate whose fetches go, as the real namespace sends them, to the outbound worker
 * with the declared parameters `DISPATCHER.get` passed as its env, or straight to the network when
 * the binding has no outbound worker. An isolate's outbound must be an entrypoint of the worker
 * that loads it, which is why the namespace is a worker of its own and not part of the test.
 */
import { exports, WorkerEntrypoint } from "cloudflare:workers";
import outboundWorker from "../../src/egress/outbound-worker";

/** A script as the fake API stored it, with the binding's outbound worker for this `get`. */
export interface DispatchedScript {
  /** Changes with every upload, so an updated script gets a fresh isolate. */
  id: string;
  metadata: { main_module: string; compatibility_date: string; compatibility_flags: string[] };
  modules: Record<string, WorkerLoaderModule>;
  /** The outbound worker's env (the declared parameters that were passed), or null for none. */
  outbound: Record<string, unknown> | null;
}

interface UserWorker {
  run(inputJson: string, bridge: null): Promise<unknown>;
  checkEgress(url: string): Promise<string | null>;
}

interface NamespaceEnv {
  LOADER: WorkerLoader;
}

/** The outbound worker as the namespace invokes it: its own code, the parameters as env. */
export class FakeOutbound extends WorkerEntrypoint<NamespaceEnv, Record<string, unknown>> {
  override fetch(request: Request): Promise<Response> {
    return outboundWorker.fetch(request as Request<unknown, IncomingRequestCfProperties>, this.ctx.props);
  }
}

/**
 * The network as a user worker without an outbound worker reaches it. A name under `.invalid`
 * never resolves (RFC 6761): answered as the failed lookup it is, rather than looked up, since
 * workerd logs a failed lookup as an uncaught exception with native stack addresses.
 */
export class FakeNetwork extends WorkerEntrypoint<NamespaceEnv> {
  override fetch(request: Request): Promise<Response> {
    if (new URL(request.url).hostname.endsWith(".invalid")) {
      return Promise.resolve(new Response("DNS lookup failed: the name does not resolve", { status: 502 }));
    }
    return fetch(request);
  }
}

export class FakeNamespace extends WorkerEntrypoint<NamespaceEnv> {
  run(script: DispatchedScript, inputJson: string): Promise<unknown> {
    return this.userWorker(script).run(inputJson, null);
  }

  checkEgress(script: DispatchedScript, url: string): Promise<string | null> {
    return this.userWorker(script).checkEgress(url);
  }

  private userWorker(script: DispatchedScript): UserWorker {
    const { outbound } = script;
    const entrypoints = exports as unknown as {
      FakeOutbound(options: { props: Record<string, unknown> }): Fetcher;
      FakeNetwork(options: { props: Record<string, never> }): Fetcher;
    };
    const worker = this.env.LOADER.get(`${script.id}/${outbound === null ? "no-outbound" : JSON.stringify(outbound)}`, () => ({
      compatibilityDate: script.metadata.compatibility_date,
      compatibilityFlags: script.metadata.compatibility_flags,
      mainModule: script.metadata.main_module,
      modules: script.modules,
      env: {},
      // Without an outbound worker, the user worker's fetches reach the network directly.
      globalOutbound: outbound === null ? entrypoints.FakeNetwork({ props: {} }) : entrypoints.FakeOutbound({ props: outbound }),
    }));
    return worker.getEntrypoint() as unknown as UserWorker;
  }
}

export default {
  fetch: () => new Response("the fake dispatch namespace answers RPC only", { status: 404 }),
} satisfies ExportedHandler;
