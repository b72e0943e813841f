import { ELEMENT_KINDS, type ElementKind, type ElementOptions, type Operation, type RevealOperation } from "../protocol";
import { type InitContext, randomId, VaultElement } from "./element";
import { ProblemError } from "./problem";
import { describeRequest } from "./shape";

/**
 * What `TokenVaultElements.init` resolves to: elements of one public key, and the two requests
 * that send their values to the vault. Each request is sent by one of its elements' frames; the
 * page only ever sees the vault's answer.
 */
export class Vault {
  private readonly init: InitContext;
  private readonly elements: VaultElement[] = [];

  readonly tokens = {
    /** POST /tokens with `{type, data, containers, metadata, expires_at, deduplicate_token}`; elements only in `data`. */
    create: (request: unknown): Promise<unknown> => this.send("tokens.create", request),
    /**
     * GET /tokens/{id} with a session's key, run in a frame: the token with each data leaf replaced by
     * a reference, which only `setValue` of a read-only text element can show.
     */
    retrieve: (id: string, { apiKey }: { apiKey: string }): Promise<unknown> => this.reveal("tokens.retrieve", { id, apiKey }),
  };

  readonly sessions = {
    /** POST /sessions with the init's public key: `{sessionKey, nonce, expiresAt}`; the page's server authorizes the nonce. */
    create: (): Promise<unknown> => this.reveal("sessions.create", {}),
  };

  constructor(vaultOrigin: string, key: string) {
    this.init = { vaultOrigin, key, channel: randomId() };
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

  /** A request without element values, sent by any mounted element's frame (the API has no CORS: the page cannot call it). */
  private async reveal(operation: RevealOperation, body: unknown): Promise<unknown> {
    const sender = this.elements.find((element) => element.mounted);
    if (!sender) throw ProblemError.badRequest("Mount an element before sending a request: its frame sends it");
    await sender.whenReady();
    return sender.submit(operation, body, []);
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
