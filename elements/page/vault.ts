import {
  ELEMENT_KINDS,
  type ElementKind,
  type ElementOptions,
  type Operation,
  type PageSession,
  RETRIEVE_TAKES_A_SESSION,
  randomHex,
} from "../protocol";
import { type InitContext, VaultElement } from "./element";
import { ProblemError } from "./problem";
import { describeRequest } from "./shape";

/**
 * What `TokenVaultElements.init` resolves to: elements of one public key, and the requests that
 * send their values to the vault. Each request is sent by one of its elements' frames; the
 * page only ever sees the vault's answer.
 */
export class Vault {
  private readonly init: InitContext;
  private readonly elements: VaultElement[] = [];

  readonly tokens = {
    /** POST /tokens with `{type, data, containers, metadata, expires_at, deduplicate_token}`; elements only in `data`. */
    create: (request: unknown): Promise<unknown> => this.send("tokens.create", request),
    /**
     * GET /tokens/{id}, run in the frame holding the session's key: the token with each data leaf
     * replaced by a reference, which only `setValue` of a read-only text element can show.
     */
    retrieve: (id: string, options: { session: PageSession | string }): Promise<unknown> => this.retrieve(id, options),
  };

  readonly tokenIntents = {
    /**
     * POST /token-intents with `{type, data}`; elements only in `data`. The answer names the intent (id,
     * type, times), never its data, facts or fingerprint: the page's server converts it with a private key.
     */
    create: (request: unknown): Promise<unknown> => this.send("tokenIntents.create", request),
  };

  readonly sessions = {
    /**
     * POST /sessions with the init's public key, sent by the first mounted element's frame, which keeps
     * the session key: `{handle, nonce, expiresAt}`. The page's server authorizes the nonce.
     */
    create: (): Promise<PageSession> => this.createSession(),
  };

  /** The element whose frame holds each session's key, by the session's handle. */
  private readonly sessionHolders = new Map<string, VaultElement>();

  constructor(vaultOrigin: string, key: string) {
    this.init = { vaultOrigin, key, channel: randomHex() };
  }

  createElement(kind: ElementKind, options: ElementOptions = {}): VaultElement {
    if (!ELEMENT_KINDS.includes(kind)) throw new TypeError(`Unknown element kind ${String(kind)}: one of ${ELEMENT_KINDS.join(", ")}`);
    const element = new VaultElement(this.init, kind, options);
    this.elements.push(element);
    return element;
  }

  /** POST /tokenize: any JSON, with elements where strings may stand or in a token request's data. */
  tokenize(payload: unknown): Promise<unknown> {
    return this.send("tokenize", payload);
  }

  /** Sent by a mounted element's frame (the API has no CORS: the page cannot call it), which keeps the key. */
  private async createSession(): Promise<PageSession> {
    const holder = this.elements.find((element) => element.mounted);
    if (!holder) throw ProblemError.badRequest("Mount an element before creating a session: its frame creates it and keeps its key");
    await holder.whenReady();
    const session = (await holder.submit("sessions.create", {}, [])) as PageSession;
    this.sessionHolders.set(session.handle, holder);
    return session;
  }

  private async retrieve(id: string, options: { session?: PageSession | string; apiKey?: unknown } | undefined): Promise<unknown> {
    const handle = typeof options?.session === "string" ? options.session : options?.session?.handle;
    const holder = handle === undefined ? undefined : this.sessionHolders.get(handle);
    if (!holder || options?.apiKey !== undefined) throw ProblemError.badRequest(RETRIEVE_TAKES_A_SESSION);
    if (!holder.mounted) {
      throw ProblemError.badRequest(
        "The element whose frame created the session was unmounted, and the session's key with it: create another session",
      );
    }
    await holder.whenReady();
    return holder.submit("tokens.retrieve", { id, session: handle }, []);
  }

  private async send(operation: Operation, request: unknown): Promise<unknown> {
    const { shape, references, elements } = describeRequest(request);
    if (elements.some((element) => !this.elements.includes(element))) {
      throw ProblemError.badRequest("The request holds an element of another init: its frames cannot gather with this one's");
    }
    // The frame of the request's first element sends it; a request without elements, any mounted one.
    const sender = elements[0] ?? this.elements.find((element) => element.mounted);
    if (!sender) throw ProblemError.badRequest("Mount an element before sending a request: its frame sends it");
    await Promise.all([sender, ...elements].map((element) => element.whenReady()));
    return sender.submit(operation, shape, references);
  }
}
