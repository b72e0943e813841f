import { describe, expect, it } from "vitest";
import { checkCvc, checkExpiration, checkNumber, groupNumber, parseExpiration, passesLuhn } from "../../elements/frame/cards";

/* How a frame checks a card while it is typed (elements/frame/cards.ts): brands, lengths, grouping, Luhn, security codes and expiry. */

describe("card numbers", () => {
  it.each([
    ["4242424242424242", "visa", "4242 4242 4242 4242"],
    ["5555555555554444", "mastercard", "5555 5555 5555 4444"],
    ["2223003122003222", "mastercard", "2223 0031 2200 3222"],
    ["378282246310005", "american-express", "3782 822463 10005"],
    ["6011111111111117", "discover", "6011 1111 1111 1117"],
    ["36227206271667", "diners-club", "3622 720627 1667"],
    ["3566002020360505", "jcb", "3566 0020 2036 0505"],
    ["6200000000000005", "unionpay", "6200 0000 0000 0005"],
    ["6759649826438453", "maestro", "6759 6498 2643 8453"],
  ])("%s is a complete %s, shown as %s", (number, brand, grouped) => {
    expect(checkNumber(number)).toMatchObject({ brand, error: undefined });
    expect(groupNumber(number)).toBe(grouped);
  });

  it("the brand is known from its leading digits, before the number is complete", () => {
    expect(checkNumber("4")).toMatchObject({ brand: "visa", error: "incomplete" });
    expect(checkNumber("37")).toMatchObject({ brand: "american-express", error: "incomplete" });
    expect(checkNumber("2")).toMatchObject({ brand: undefined, error: "incomplete" });
    expect(checkNumber("2221")).toMatchObject({ brand: "mastercard" });
  });

  it("a number no brand starts with is invalid at once", () => {
    expect(checkNumber("9")).toMatchObject({ brand: undefined, error: "invalid" });
    expect(checkNumber("1234")).toMatchObject({ error: "invalid" });
  });

  it("a number of one of its brand's lengths that fails the Luhn check gives luhn", () => {
    expect(passesLuhn("4242424242424241")).toBe(false);
    expect(checkNumber("4242424242424241")).toMatchObject({ brand: "visa", error: "luhn" });
    expect(checkNumber("378282246310006")).toMatchObject({ brand: "american-express", error: "luhn" });
  });

  it("typing stops at the brand's longest length", () => {
    expect(checkNumber("37828224631000").maxLength).toBe(15);
    expect(checkNumber("4242").maxLength).toBe(19);
    expect(checkNumber("37828224631000512")).toMatchObject({ error: "invalid" });
  });
});

describe("security codes", () => {
  it("three digits, four for American Express, either without a brand", () => {
    expect(checkCvc("12", "visa")).toBe("incomplete");
    expect(checkCvc("123", "visa")).toBeUndefined();
    expect(checkCvc("1234", "visa")).toBe("invalid");
    expect(checkCvc("123", "american-express")).toBe("incomplete");
    expect(checkCvc("1234", "american-express")).toBeUndefined();
    expect(checkCvc("123", undefined)).toBeUndefined();
    expect(checkCvc("1234", undefined)).toBeUndefined();
  });
});

describe("expiration dates", () => {
  const today = new Date(2026, 4, 15);

  it("reads MM / YY as typed, pasted or autofilled", () => {
    expect(parseExpiration("12 / 30")).toMatchObject({ month: 12, year: 2030 });
    expect(parseExpiration("1230")).toMatchObject({ month: 12, year: 2030 });
    expect(parseExpiration("12/2030")).toMatchObject({ month: 12, year: 2030 });
    expect(parseExpiration("4")).toMatchObject({ monthDigits: "04", month: 4, year: undefined });
    expect(parseExpiration("1/30")).toMatchObject({ month: 1, year: 2030 });
  });

  it("a date before this month is expired; this month is not", () => {
    expect(checkExpiration(4, 2026, today)).toBe("expired");
    expect(checkExpiration(12, 2025, today)).toBe("expired");
    expect(checkExpiration(5, 2026, today)).toBeUndefined();
  });

  it("a month outside 1–12 or a year more than 50 years on is invalid; a missing part incomplete", () => {
    expect(checkExpiration(13, undefined, today)).toBe("invalid");
    expect(checkExpiration(0, 2030, today)).toBe("invalid");
    expect(checkExpiration(1, 2090, today)).toBe("invalid");
    expect(checkExpiration(12, undefined, today)).toBe("incomplete");
  });
});
