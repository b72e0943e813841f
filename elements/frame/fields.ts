import {
  type CardBrand,
  checkCvc,
  checkExpiration,
  checkNumber,
  cvcLengthOf,
  type ErrorCode,
  type FieldError,
  groupNumber,
  parseExpiration,
} from "./cards";

/*
 * The inputs of a frame. Each field formats what is typed as it is typed, says what is wrong with
 * it as an error code, and gives its value only to the frame's own code.
 */

export interface Field {
  name: FieldError["field"];
  input: HTMLInputElement;
  /** Rewrites the input's text in the field's format; `deleting` when the user removed text. */
  format(deleting: boolean): void;
  error(): ErrorCode | undefined;
}

export interface NumberField extends Field {
  digits(): string;
  brand(): CardBrand | undefined;
}

export interface ExpirationField extends Field {
  month(): number | undefined;
  year(): number | undefined;
}

export interface TextField extends Field {
  text(): string;
}

export function numberField(): NumberField {
  const input = createInput("number", "cc-number", "numeric");
  const digits = () => input.value.replace(/\D/g, "");
  return {
    name: "number",
    input,
    digits,
    brand: () => checkNumber(digits()).brand,
    error: () => checkNumber(digits()).error,
    format() {
      const typed = digits();
      const kept = typed.slice(0, checkNumber(typed).maxLength);
      rewrite(input, groupNumber(kept));
    },
  };
}

export function expirationField(): ExpirationField {
  const input = createInput("expiration", "cc-exp", "numeric");
  const parsed = () => parseExpiration(input.value);
  return {
    name: "expiration",
    input,
    month: () => parsed().month,
    year: () => parsed().year,
    error: () => {
      const { month, year } = parsed();
      return checkExpiration(month, year, new Date());
    },
    format(deleting) {
      const { monthDigits, yearDigits } = parsed();
      // A pasted or autofilled four-digit year is shown as its last two digits.
      const year = yearDigits.length === 4 ? yearDigits.slice(2) : yearDigits.slice(0, 2);
      const separator = year !== "" || (monthDigits.length === 2 && !deleting) ? " / " : "";
      rewrite(input, `${monthDigits}${separator}${year}`);
    },
  };
}

/** The security code's length follows the brand of the number, in this frame or another of the same init. */
export function cvcField(brand: () => CardBrand | undefined): Field & { digits(): string } {
  const input = createInput("cvc", "cc-csc", "numeric");
  const digits = () => input.value.replace(/\D/g, "");
  return {
    name: "cvc",
    input,
    digits,
    error: () => checkCvc(digits(), brand()),
    format() {
      rewrite(input, digits().slice(0, cvcLengthOf(brand()) ?? 4));
    },
  };
}

export function textField(): TextField {
  const input = createInput("value", "off", "text");
  return { name: "value", input, text: () => input.value, error: () => undefined, format() {} };
}

function createInput(name: string, autocomplete: string, inputMode: string): HTMLInputElement {
  const input = document.createElement("input");
  input.name = name;
  input.id = name;
  input.type = "text";
  input.autocomplete = autocomplete as AutoFill;
  input.inputMode = inputMode;
  input.spellcheck = false;
  input.setAttribute("autocorrect", "off");
  return input;
}

/** Sets the text and keeps the caret after the same number of digits (or characters) it followed. */
function rewrite(input: HTMLInputElement, text: string): void {
  if (input.value === text) return;
  const caret = input.selectionStart ?? input.value.length;
  const atEnd = caret >= input.value.length;
  const before = input.value.slice(0, caret).replace(/\D/g, "").length;
  input.value = text;
  if (atEnd || document.activeElement !== input) return;
  let position = 0;
  for (let seen = 0; position < text.length && seen < before; position++) if (/\d/.test(text[position]!)) seen++;
  input.setSelectionRange(position, position);
}
