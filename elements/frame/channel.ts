import { type ChannelMessage, channelName, type FrameParameters } from "../protocol";
import type { CardBrand, FieldError } from "./cards";
import { badRequest, RefusedRequest } from "./problems";

/*
 * The frames of one init gather values among themselves on a BroadcastChannel named after the init's
 * random channel id. Only documents of the vault's origin, in the same top-level site, can open it:
 * the merchant's page cannot listen, and the values never pass through it.
 */

/** What this frame holds, as the other frames of its init may ask for it. */
export interface Holding {
  value(): unknown;
  errors(): FieldError[];
  /** The brand of the number typed here, for a security code frame; undefined without a number. */
  brand(): CardBrand | undefined;
  /** The value of a reference to a token this frame retrieved; undefined when it holds none. */
  revealed(reference: string): unknown;
}

export interface Gathered {
  value: unknown;
  errors: FieldError[];
}

/** How long the asking frame waits for the others; they answer at once, unless they are gone. */
const GATHER_TIMEOUT_MS = 5_000;

export class FrameChannel {
  private readonly channel: BroadcastChannel;
  private readonly waiting = new Map<string, { missing: Set<string>; gathered: Map<string, Gathered>; done: () => void }>();
  private readonly resolving = new Map<string, (value: unknown) => void>();

  constructor(
    private readonly parameters: FrameParameters,
    private readonly holding: Holding,
    onBrand: (brand: CardBrand | undefined) => void,
  ) {
    this.channel = new BroadcastChannel(channelName(parameters.channel));
    this.channel.onmessage = ({ data }: MessageEvent<ChannelMessage>) => {
      if (data.type === "gather") {
        // Frames of another key are never given a value, even on the same channel.
        if (data.key !== parameters.key || !data.elements.includes(parameters.element)) return;
        this.post({ type: "value", id: data.id, element: parameters.element, value: holding.value(), errors: holding.errors() });
      } else if (data.type === "value") {
        const request = this.waiting.get(data.id);
        if (!request?.missing.delete(data.element)) return;
        request.gathered.set(data.element, { value: data.value, errors: data.errors });
        if (request.missing.size === 0) request.done();
      } else if (data.type === "brand") {
        onBrand(data.brand);
      } else if (data.type === "brand?") {
        this.announceBrand();
      } else if (data.type === "resolve") {
        const value = data.key === parameters.key ? holding.revealed(data.reference) : undefined;
        if (value !== undefined) this.post({ type: "resolved", id: data.id, value });
      } else if (data.type === "resolved") {
        this.resolving.get(data.id)?.(data.value);
      }
    };
    this.post({ type: "brand?" });
  }

  announceBrand(): void {
    const brand = this.holding.brand();
    if (brand !== undefined) this.post({ type: "brand", brand });
  }

  /** The values of the named elements (this frame's own among them, if named), or a problem naming those that did not answer. */
  gather(elements: string[]): Promise<Map<string, Gathered>> {
    const gathered = new Map<string, Gathered>();
    const missing = new Set(elements);
    if (missing.delete(this.parameters.element)) {
      gathered.set(this.parameters.element, { value: this.holding.value(), errors: this.holding.errors() });
    }
    if (missing.size === 0) return Promise.resolve(gathered);
    const id = crypto.randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new RefusedRequest(badRequest(`${missing.size} of the request's elements did not answer: mount them and wait for ready`)));
      }, GATHER_TIMEOUT_MS);
      this.waiting.set(id, {
        missing,
        gathered,
        done: () => {
          clearTimeout(timer);
          this.waiting.delete(id);
          resolve(gathered);
        },
      });
      this.post({ type: "gather", id, key: this.parameters.key, elements: [...missing] });
    });
  }

  /** A reference's value, from this frame or the frame of this init that retrieved its token; a problem when none holds it. */
  resolve(reference: string): Promise<unknown> {
    const own = this.holding.revealed(reference);
    if (own !== undefined) return Promise.resolve(own);
    const id = crypto.randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.resolving.delete(id);
        reject(
          new RefusedRequest(
            badRequest("No element of this init holds the reference: the element that retrieved the token must stay mounted"),
          ),
        );
      }, GATHER_TIMEOUT_MS);
      this.resolving.set(id, (value) => {
        clearTimeout(timer);
        this.resolving.delete(id);
        resolve(value);
      });
      this.post({ type: "resolve", id, key: this.parameters.key, reference });
    });
  }

  private post(message: ChannelMessage): void {
    this.channel.postMessage(message);
  }
}
