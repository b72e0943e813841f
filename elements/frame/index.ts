import {
  type ChangeEvent,
  ELEMENT_KINDS,
  type ElementKind,
  type ElementOptions,
  type ElementReference,
  type FrameMessage,
  type FrameParameters,
  HEADER_PREFIX_PATTERN,
  type PageMessage,
  REFERENCE_PATTERN,
} from "../protocol";
import { applyOptions, showState } from "./appearance";
import type { CardBrand, FieldError } from "./cards";
import { FrameChannel } from "./channel";
import { cvcField, expirationField, type Field, numberField, textField } from "./fields";
import { badRequest, problemOf, RefusedRequest } from "./problems";
import { isRevealOperation, revealedValue, runRevealOperation } from "./reveal";
import { fillRequest, isOperation, sendToVault } from "./submit";

/*
 * The page of one element, served from the vault's origin into an iframe of the merchant's page.
 * What is typed here stays here: the page that framed it gets events without values, and a value
 * leaves only in a request this frame sends to the vault, or to another frame of the same init that
 * sends one (./channel.ts).
 */

function start(parameters: FrameParameters): void {
  let options = readOptions();
  const number = parameters.kind === "card" || parameters.kind === "cardNumber" ? numberField() : undefined;
  const expiration = parameters.kind === "card" || parameters.kind === "cardExpirationDate" ? expirationField() : undefined;
  let brandElsewhere: CardBrand | undefined;
  const brand = () => (number ? number.brand() : brandElsewhere);
  const cvc = parameters.kind === "card" || parameters.kind === "cardVerificationCode" ? cvcField(brand) : undefined;
  const text = parameters.kind === "text" ? textField() : undefined;
  const fields: Field[] = [number, expiration, cvc, text].filter((field) => field !== undefined);
  const labels = DEFAULT_LABELS[parameters.kind];

  const form = document.createElement("form");
  form.className = `element ${parameters.kind}`;
  form.noValidate = true;
  form.addEventListener("submit", (event) => event.preventDefault());
  for (const field of fields) {
    const label = document.createElement("label");
    label.className = `field ${field.name}`;
    label.append(document.createElement("span"), field.input);
    form.append(label);
  }
  document.body.append(form);
  applyOptions(fields, options, labels);
  /** Whether the text shown is a revealed value (setValue): it is never gathered into a request, and stays read-only. */
  let revealing = false;
  if (text && options.copy === true) form.append(copyButton(text.input));

  const errors = (): FieldError[] =>
    fields.flatMap((field) => {
      const code = field.error();
      return code ? [{ field: field.name, code }] : [];
    });
  const channel = new FrameChannel(
    parameters,
    {
      value: () => {
        const expirationValue = { expiration_month: expiration?.month(), expiration_year: expiration?.year() };
        if (parameters.kind === "card") return { number: number?.digits(), ...expirationValue, cvc: cvc?.digits() };
        if (parameters.kind === "cardExpirationDate") return expirationValue;
        return revealing ? undefined : (number?.digits() ?? cvc?.digits() ?? text?.text());
      },
      errors: () => (revealing ? [{ field: "value", code: "invalid" }] : errors()),
      brand: () => number?.brand(),
      revealed: revealedValue,
    },
    (announced) => {
      if (number || !cvc || announced === brandElsewhere) return;
      brandElsewhere = announced;
      cvc.format(false);
      refresh(true);
    },
  );

  const toPage = (message: FrameMessage) => window.parent.postMessage(message, parameters.origin);
  let focused = false;

  /** Shows the element's state to its style, and tells the page when the value changed. */
  function refresh(changed: boolean): void {
    const found = errors();
    const empty = fields.every((field) => field.input.value === "");
    const change: ChangeEvent = {
      elementType: parameters.kind,
      empty,
      complete: !empty && found.length === 0,
      valid: found.every(({ code }) => code === "incomplete"),
      errors: found,
    };
    if (number) {
      change.cardBrand = number.brand() ?? "unknown";
      if (number.error() === undefined) {
        change.cardBin = number.digits().slice(0, 6);
        change.cardLast4 = number.digits().slice(-4);
      }
    }
    showState({
      focused,
      empty,
      complete: change.complete,
      invalid: !change.valid || (!focused && !empty && found.length > 0),
    });
    if (changed) toPage({ type: "change", change });
  }

  fields.forEach((field, index) => {
    field.input.addEventListener("input", (event) => {
      const brandBefore = number?.brand();
      field.format((event as InputEvent).inputType?.startsWith("delete") ?? false);
      if (number && number.brand() !== brandBefore) {
        channel.announceBrand();
        cvc?.format(false);
      }
      // In the card element, a part typed to its end moves on to the next.
      const next = fields[index + 1];
      if (next && field.input.value !== "" && field.error() === undefined && field !== cvc) next.input.focus();
      refresh(true);
    });
  });
  document.addEventListener("focusin", () => {
    if (focused) return;
    focused = true;
    toPage({ type: "focus" });
    refresh(false);
  });
  document.addEventListener("focusout", (event) => {
    if (form.contains(event.relatedTarget as Node | null)) return;
    focused = false;
    toPage({ type: "blur" });
    refresh(false);
  });
  new ResizeObserver(() => toPage({ type: "resize", height: Math.ceil(form.getBoundingClientRect().height) })).observe(form);

  window.addEventListener("message", (event: MessageEvent<PageMessage>) => {
    if (event.source !== window.parent || event.origin !== parameters.origin) return;
    const message = event.data;
    if (message.type === "update") {
      options = { ...options, ...message.options };
      applyOptions(fields, options, labels);
      if (revealing && text) text.input.readOnly = true;
    } else if (message.type === "clear") {
      for (const field of fields) field.input.value = "";
      revealing = false;
      refresh(true);
    } else if (message.type === "focus") {
      fields[0]!.input.focus();
    } else if (message.type === "blur") {
      (document.activeElement as HTMLElement | null)?.blur();
    } else if (message.type === "submit") {
      submit(message).then((result) => toPage({ type: "result", id: message.id, ...result }));
    } else if (message.type === "setValue") {
      show(message.reference).then((result) => toPage({ type: "result", id: message.id, ...result }));
    }
  });

  /** Shows a reference's value, resolved among the init's frames; the page hears only whether it worked. */
  async function show(reference: unknown) {
    if (!text || options.readOnly !== true) {
      return { ok: false as const, problem: badRequest("setValue shows a value only in a text element created with { readOnly: true }") };
    }
    if (typeof reference !== "string" || !REFERENCE_PATTERN.test(reference)) {
      return { ok: false as const, problem: badRequest("setValue takes a reference from tokens.retrieve") };
    }
    try {
      const value = await channel.resolve(reference);
      revealing = true;
      text.input.readOnly = true;
      text.input.value = typeof value === "string" ? value : JSON.stringify(value);
      refresh(false);
      return { ok: true as const, body: null };
    } catch (error) {
      return { ok: false as const, problem: problemOf(error) };
    }
  }

  async function submit(message: Extract<PageMessage, { type: "submit" }>) {
    try {
      const { operation, body, references } = message;
      if (isRevealOperation(operation)) return await runRevealOperation(parameters, operation, body);
      if (!isOperation(operation) || !Array.isArray(references) || !references.every(isReference)) {
        throw new RefusedRequest(badRequest("Not a request the elements can send"));
      }
      const gathered = await channel.gather([...new Set(references.map(({ element }) => element))]);
      return await sendToVault(parameters, operation, fillRequest(operation, body, references, gathered));
    } catch (error) {
      return { ok: false as const, problem: problemOf(error) };
    }
  }

  refresh(false);
  toPage({ type: "ready" });
}

/** Copies what the input shows, from inside the frame (the iframe allows clipboard-write). */
function copyButton(input: HTMLInputElement): HTMLButtonElement {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy";
  button.textContent = "Copy";
  button.addEventListener("click", () => {
    navigator.clipboard.writeText(input.value).catch(() => {});
  });
  return button;
}

const DEFAULT_LABELS: Record<ElementKind, string[]> = {
  card: ["Card number", "Expiration date (MM / YY)", "Security code"],
  cardNumber: ["Card number"],
  cardExpirationDate: ["Expiration date (MM / YY)"],
  cardVerificationCode: ["Security code"],
  text: ["Text"],
};

function readParameters(): FrameParameters | null {
  const query = new URLSearchParams(location.search);
  const prefix = document.querySelector<HTMLMetaElement>('meta[name="header-prefix"]')?.content ?? "";
  const parameters = {
    ...Object.fromEntries(["kind", "element", "key", "channel", "origin"].map((name) => [name, query.get(name) ?? ""])),
    prefix,
  } as unknown as FrameParameters;
  const usable =
    Object.values(parameters).every((value) => value !== "") &&
    (ELEMENT_KINDS as readonly string[]).includes(parameters.kind) &&
    HEADER_PREFIX_PATTERN.test(parameters.prefix);
  // Framed by nothing, or without its parameters, the page does nothing at all.
  return usable && window.parent !== window ? parameters : null;
}

function readOptions(): ElementOptions {
  try {
    const options = JSON.parse(decodeURIComponent(location.hash.slice(1)) || "{}");
    return typeof options === "object" && options !== null ? options : {};
  } catch {
    return {};
  }
}

function isReference(value: unknown): value is ElementReference {
  const reference = value as ElementReference;
  return (
    typeof value === "object" &&
    value !== null &&
    typeof reference.element === "string" &&
    Array.isArray(reference.path) &&
    reference.path.every((segment) => typeof segment === "string" || Number.isInteger(segment)) &&
    (reference.part === undefined || reference.part === "month" || reference.part === "year")
  );
}

const parameters = readParameters();
if (parameters) start(parameters);
