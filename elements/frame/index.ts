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
} from "../protocol";
import { applyOptions, showState } from "./appearance";
import type { CardBrand, FieldError } from "./cards";
import { FrameChannel } from "./channel";
import { cvcField, expirationField, type Field, numberField, textField } from "./fields";
import { badRequest } from "./problems";
import { fillRequest, isOperation, RefusedRequest, sendToVault } from "./submit";

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
        return number?.digits() ?? cvc?.digits() ?? text?.text();
      },
      errors,
      brand: () => number?.brand(),
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
    } else if (message.type === "clear") {
      for (const field of fields) field.input.value = "";
      refresh(true);
    } else if (message.type === "focus") {
      fields[0]!.input.focus();
    } else if (message.type === "blur") {
      (document.activeElement as HTMLElement | null)?.blur();
    } else if (message.type === "submit") {
      submit(message).then((result) => toPage({ type: "result", id: message.id, ...result }));
    }
  });

  async function submit(message: Extract<PageMessage, { type: "submit" }>) {
    try {
      const { operation, body, references } = message;
      if (!isOperation(operation) || !Array.isArray(references) || !references.every(isReference)) {
        throw new RefusedRequest(badRequest("Not a request the elements can send"));
      }
      const gathered = await channel.gather([...new Set(references.map(({ element }) => element))]);
      return await sendToVault(parameters, operation, fillRequest(operation, body, references, gathered));
    } catch (error) {
      return { ok: false as const, problem: error instanceof RefusedRequest ? error.problem : badRequest(String(error)) };
    }
  }

  refresh(false);
  toPage({ type: "ready" });
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
