import {
  type ChangeEvent,
  type ElementKind,
  type ElementOptions,
  type ElementReference,
  FRAME_PATH,
  type FrameMessage,
  type Operation,
  type PageMessage,
  type RevealOperation,
  randomHex,
} from "../protocol";
import { ProblemError } from "./problem";

/*
 * An element as the merchant's page holds it: an iframe of the vault's origin, driven by postMessage.
 * The page learns the element's state from its events and never its value; no message it can send
 * asks for one.
 */

export type ElementEvent = "ready" | "change" | "focus" | "blur";
type Handler = (event: ChangeEvent | undefined) => void;

/** What an element needs of the init that created it. */
export interface InitContext {
  vaultOrigin: string;
  key: string;
  /** Random per init: the frames of one init gather values among themselves on it. */
  channel: string;
}

/** The month or the year of an expiration date element, to place apart in a request. */
export class ElementPart {
  constructor(
    readonly element: VaultElement,
    readonly part: "month" | "year",
  ) {}
}

/** Each mounted frame's window, to its element: a message from any other window is not an element's. */
const framedElements = new Map<MessageEventSource, VaultElement>();

addEventListener("message", (event: MessageEvent<FrameMessage>) => {
  const element = event.source && framedElements.get(event.source);
  if (element && event.origin === element.init.vaultOrigin) element.receive(event.data);
});

export class VaultElement {
  readonly id = randomHex();
  private iframe: HTMLIFrameElement | undefined;
  private ready: Promise<void> | undefined;
  private markReady = () => {};
  private readonly handlers = new Map<ElementEvent, Set<Handler>>();
  private readonly results = new Map<number, { resolve: (body: unknown) => void; reject: (error: ProblemError) => void }>();
  private nextResult = 0;

  constructor(
    readonly init: InitContext,
    readonly kind: ElementKind,
    private options: ElementOptions,
  ) {}

  /** Puts the element's iframe into the container (a selector or an element); resolves once it is ready. */
  async mount(target: string | HTMLElement): Promise<void> {
    const container = typeof target === "string" ? document.querySelector(target) : target;
    if (!(container instanceof HTMLElement)) throw new TypeError(`No element to mount into: ${String(target)}`);
    if (this.iframe) throw new Error("The element is already mounted: unmount it first");
    const iframe = document.createElement("iframe");
    const { vaultOrigin, key, channel } = this.init;
    const query = new URLSearchParams({ kind: this.kind, element: this.id, key, channel, origin: location.origin });
    // The options travel in the fragment: the frame reads them at once, and they are never sent to a server.
    iframe.src = `${vaultOrigin}${FRAME_PATH}?${query}#${encodeURIComponent(JSON.stringify(this.options))}`;
    iframe.title = this.options.label ?? "Secure input";
    iframe.referrerPolicy = "origin";
    // A text element's copy button writes to the clipboard from inside the frame.
    iframe.allow = "clipboard-write";
    iframe.setAttribute("scrolling", "no");
    iframe.style.cssText = "display:block;width:100%;height:2.5em;border:0;margin:0;padding:0;background:transparent;overflow:hidden";
    this.iframe = iframe;
    this.ready = new Promise((resolve) => {
      this.markReady = resolve;
    });
    container.append(iframe);
    framedElements.set(iframe.contentWindow!, this);
    try {
      await Promise.race([this.ready, notReadyInTime(iframe)]);
    } catch (problem) {
      if (this.iframe === iframe) this.unmount();
      throw problem;
    }
  }

  on(event: ElementEvent, handler: Handler): this {
    const handlers = this.handlers.get(event) ?? new Set();
    handlers.add(handler);
    this.handlers.set(event, handlers);
    return this;
  }

  update(options: ElementOptions): void {
    this.options = { ...this.options, ...options };
    if (options.label && this.iframe) this.iframe.title = options.label;
    this.send({ type: "update", options });
  }

  clear(): void {
    this.send({ type: "clear" });
  }

  focus(): void {
    // A frame may only take the focus once its iframe has it.
    this.iframe?.focus();
    this.send({ type: "focus" });
  }

  blur(): void {
    this.send({ type: "blur" });
  }

  unmount(): void {
    if (!this.iframe) return;
    framedElements.delete(this.iframe.contentWindow!);
    this.iframe.remove();
    this.iframe = undefined;
    this.ready = undefined;
    for (const { reject } of this.results.values()) reject(ProblemError.badRequest("The element was unmounted before the vault answered"));
    this.results.clear();
  }

  /** The month of an expiration date (of a cardExpirationDate or card element), for `expiration_month`. */
  month(): ElementPart {
    return this.part("month");
  }

  /** The four-digit year of an expiration date, for `expiration_year`. */
  year(): ElementPart {
    return this.part("year");
  }

  get mounted(): boolean {
    return this.iframe !== undefined;
  }

  /** Resolves once the frame is ready; rejects when the element is not mounted. */
  whenReady(): Promise<void> {
    return this.ready ?? Promise.reject(ProblemError.badRequest(`An element of the request (${this.kind}) is not mounted`));
  }

  /** Asks this element's frame to fill in the shape with the elements' values and send it to the vault. */
  submit(operation: Operation | RevealOperation, body: unknown, references: ElementReference[]): Promise<unknown> {
    return this.request((id) => ({ type: "submit", id, operation, body, references }));
  }

  /**
   * Shows the value a reference from `tokens.retrieve` stands for, in this text element created with
   * `{ readOnly: true }`: its frame gets the value from the frame that retrieved it, never through the page.
   */
  async setValue(reference: string): Promise<void> {
    if (this.kind !== "text" || this.options.readOnly !== true) {
      throw new TypeError("setValue needs a text element created with { readOnly: true }");
    }
    await this.whenReady();
    await this.request((id) => ({ type: "setValue", id, reference }));
  }

  private request(message: (id: number) => PageMessage): Promise<unknown> {
    const id = this.nextResult++;
    return new Promise((resolve, reject) => {
      this.results.set(id, { resolve, reject });
      this.send(message(id));
    });
  }

  receive(message: FrameMessage): void {
    if (message.type === "ready") {
      this.markReady();
      this.emit("ready", undefined);
    } else if (message.type === "change") {
      this.emit("change", message.change);
    } else if (message.type === "focus" || message.type === "blur") {
      this.emit(message.type, undefined);
    } else if (message.type === "resize" && this.iframe) {
      this.iframe.style.height = `${Math.max(0, Math.min(message.height, 1000))}px`;
    } else if (message.type === "result") {
      const waiting = this.results.get(message.id);
      this.results.delete(message.id);
      if (message.ok) waiting?.resolve(message.body);
      else waiting?.reject(new ProblemError(message.problem));
    }
  }

  private part(part: "month" | "year"): ElementPart {
    if (this.kind !== "cardExpirationDate" && this.kind !== "card") throw new TypeError(`A ${this.kind} element has no ${part}`);
    return new ElementPart(this, part);
  }

  private send(message: PageMessage): void {
    const iframe = this.iframe;
    this.ready?.then(() => iframe?.contentWindow?.postMessage(message, this.init.vaultOrigin));
  }

  private emit(event: ElementEvent, payload: ChangeEvent | undefined): void {
    for (const handler of this.handlers.get(event) ?? []) handler(payload);
  }
}

/** How long a frame may take to load, and to say it is ready once loaded (its script runs before its load event). */
const FRAME_LOAD_MS = 15_000;
const READY_AFTER_LOAD_MS = 3_000;

/**
 * Rejects when the frame does not become ready in time. A browser that refuses to frame the page
 * (its key's allowed_origins do not name this page's origin) shows an error page instead, which
 * loads but never says it is ready; so does a vault that refused the key or cannot be reached.
 */
function notReadyInTime(iframe: HTMLIFrameElement): Promise<never> {
  return new Promise((_, reject) => {
    const refuse = () =>
      reject(
        new ProblemError({
          title: "Service Unavailable",
          status: 503,
          detail:
            "The element's frame did not become ready: the vault may be unreachable, or refuse to serve it to this page " +
            "(the public key is not active, or its allowed_origins do not include this page's origin)",
        }),
      );
    const overall = setTimeout(refuse, FRAME_LOAD_MS);
    iframe.addEventListener(
      "load",
      () => {
        clearTimeout(overall);
        setTimeout(refuse, READY_AFTER_LOAD_MS);
      },
      { once: true },
    );
  });
}
