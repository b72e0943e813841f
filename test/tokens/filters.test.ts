import { beforeAll, describe, expect, it } from "vitest";
import { call, createApplication, expectProblem } from "../support/harness";
import { createToken, seedTokenTenant, type TokenTenant } from "../support/tokens";

/**
 * The vault's filters, evaluated the two ways tenants meet them: as a token's mask read back by an
 * application whose transform is mask (text), and as `{{ <id> | filters }}` in POST /detokenize,
 * which keeps the result's JSON type.
 */

let tenant: TokenTenant;
let maskReader: string;

beforeAll(async () => {
  tenant = await seedTokenTenant();
  maskReader = (await createApplication(tenant, { type: "private", permissions: ["token:read"] })).key;
});

async function masked(data: unknown, mask: unknown, type = "token"): Promise<unknown> {
  const token = await createToken(tenant.key, { type, data, ...(mask ? { mask } : {}) });
  const read = await call("GET", `/tokens/${token.id}`, { key: maskReader });
  expect(read.status, JSON.stringify(read.body)).toBe(200);
  return read.body.data;
}

function detokenize(data: unknown, filters: string) {
  return createToken(tenant.key, { type: "token", data }).then((token) =>
    call("POST", "/detokenize", { key: tenant.key, body: { value: `{{ ${token.id} | ${filters} }}` } }),
  );
}

async function evaluated(data: unknown, filters: string): Promise<unknown> {
  const reply = await detokenize(data, filters);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.value;
}

/** The 400 of a filter that fails on the data: its message, after checking the data is not in the problem. */
async function failure(data: unknown, filters: string, secret = typeof data === "string" ? data : JSON.stringify(data)): Promise<string> {
  const problem = expectProblem(await detokenize(data, filters), 400);
  expect(Object.keys(problem.errors ?? {})).toEqual(["value"]);
  expect(JSON.stringify(problem)).not.toContain(secret);
  return problem.errors!.value![0]!;
}

function passesLuhn(number: string): boolean {
  const digits = [...number.replace(/\D/g, "")].map(Number).reverse();
  const sum = digits.reduce((total, digit, index) => {
    if (index % 2 === 0) return total + digit;
    return total + (digit * 2 > 9 ? digit * 2 - 9 : digit * 2);
  }, 0);
  return sum % 10 === 0;
}

const CARD = { number: "3622720627165567", expiration_month: 10, expiration_year: 2028 };

describe("reveal_last: length, mask_char", () => {
  it("masks letters and digits but the last n, and keeps separators", async () => {
    expect(await masked("123-45-6789", "{{ data | reveal_last: 4 }}")).toBe("XXX-XX-6789");
    expect(await masked("12-3456789", "{{ data | reveal_last: 7 }}")).toBe("XX-3456789");
    expect(await masked("4242-4242-4242-4242", "{{ data | reveal_last: 4, '#' }}")).toBe("####-####-####-4242");
  });

  it("gives the masks page's examples", async () => {
    expect(await masked("4242-4242-4242-4242", "{{ data | reveal_last: 4 }}")).toBe("XXXX-XXXX-XXXX-4242");
    expect(await masked("123-45-6789", "{{ data | reveal_last: 4, '#' }}")).toBe("###-##-6789");
  });

  it("counts only letters and digits toward n", async () => {
    expect(await masked("123-45-6789", "{{ data | reveal_last: 6 }}")).toBe("XXX-45-6789");
  });

  it("is the default mask of SSNs and EINs, which keeps their dashes", async () => {
    expect(await masked("123-45-6789", "", "social_security_number")).toBe("XXX-XX-6789");
    expect(await masked("12-3456789", "", "employer_id_number")).toBe("XX-XXX6789");
  });

  it("masks with X unless a mask character is given", async () => {
    expect(await masked("36227206271667", "{{ data | reveal_last: 6 }}")).toBe("XXXXXXXX271667");
    expect(await masked("36227206271667", "{{ data | reveal_last: 3, '#' }}")).toBe("###########667");
  });

  it("masks everything when n covers every letter and digit", async () => {
    expect(await masked("6789", "{{ data | reveal_last: 4 }}")).toBe("XXXX");
    expect(await masked("45-6789", "{{ data | reveal_last: 10 }}")).toBe("XX-XXXX");
  });

  it("masks every character of a value without letters or digits", async () => {
    expect(await masked("!#-&", "{{ data | reveal_last: 2 }}")).toBe("XXXX");
  });

  it("needs a length", async () => {
    expect(await failure("secret-123", "reveal_last")).toContain("reveal_last needs a count of zero or more characters");
  });
});

describe("reveal: reveal_first = 0, reveal_last = 0, mask_char = X, preserve_chars = ''", () => {
  const DATA = "3622-7206-2716-5567";

  it("keeps the first and last characters, counting every character, and masks the others, separators included", async () => {
    expect(await evaluated(DATA, "reveal: 6")).toBe("3622-7XXXXXXXXXXXXX");
    expect(await evaluated(DATA, "reveal: 7, 5")).toBe("3622-72XXXXXXX-5567");
    expect(await evaluated(DATA, "reveal: 7, 5, '#'")).toBe("3622-72#######-5567");
    expect(await evaluated("12-3456789", "reveal: 0, 4")).toBe("XXXXXX6789");
  });

  it("keeps the characters named in preserve_chars, which still count toward first and last", async () => {
    expect(await evaluated(DATA, `reveal: 7, 4, '#', "-"`)).toBe("3622-72##-####-5567");
    expect(await evaluated("ab.cd.ef", `reveal: 1, 1, '#', "c"`)).toBe("a##c###f");
  });

  it("masks everything without arguments", async () => {
    expect(await evaluated("abc", "reveal")).toBe("XXX");
  });

  it("masks everything when first + last covers the value", async () => {
    expect(await evaluated(DATA, "reveal: 10, 9")).toBe("XXXXXXXXXXXXXXXXXXX");
    expect(await evaluated(DATA, "reveal: 19")).toBe("XXXXXXXXXXXXXXXXXXX");
    expect(await evaluated(DATA, `reveal: 10, 9, 'X', "-"`)).toBe("XXXX-XXXX-XXXX-XXXX");
  });

  it("masks everything when the preserved characters would leave the value as it is", async () => {
    expect(await evaluated("1-2", "reveal: 1, 1, 'X', '-'")).toBe("X-X");
    expect(await evaluated("--", "reveal: 0, 0, 'X', '-'")).toBe("XX");
  });

  it("refuses a mask character that is not one character", async () => {
    expect(await failure(DATA, "reveal: 1, 1, '##'")).toContain("reveal needs a mask character of exactly one character");
  });
});

describe("card_mask: reveal_bin = false, reveal_last4 = false, mask_char = X, preserve_char = ''", () => {
  it("masks a card number, revealing its BIN (8 digits from 16) and last four on request", async () => {
    expect(await evaluated(CARD.number, "card_mask: 'false', 'false', 'X', '-'")).toBe("XXXXXXXXXXXXXXXX");
    expect(await evaluated(CARD.number, "card_mask: 'true', 'false', 'X', '-'")).toBe("36227206XXXXXXXX");
    expect(await evaluated(CARD.number, "card_mask: 'true', 'true', '#', '-'")).toBe("36227206####5567");
    expect(await evaluated(CARD.number, "card_mask: 'false', 'true', 'X', '-'")).toBe("XXXXXXXXXXXX5567");
  });

  it("keeps the preserved character, which does not count as a digit", async () => {
    const number = "3622-7206-2716-5567";
    expect(await evaluated(number, "card_mask: 'true', 'false', 'X', '-'")).toBe("3622-7206-XXXX-XXXX");
    expect(await evaluated(number, "card_mask: 'true', 'true', '#', '-'")).toBe("3622-7206-####-5567");
    expect(await evaluated(number, "card_mask: 'false', 'true', 'X', '-'")).toBe("XXXX-XXXX-XXXX-5567");
  });

  it("reveals a 6-digit BIN for numbers shorter than 16 digits", async () => {
    expect(await evaluated("378282246310005", "card_mask: true, true")).toBe("378282XXXXX0005");
  });

  it("masks everything without arguments", async () => {
    expect(await evaluated(CARD.number, "card_mask")).toBe("XXXXXXXXXXXXXXXX");
  });

  it("masks everything when the BIN and last four would cover the number", async () => {
    expect(await evaluated("1234567890", "card_mask: 'true', 'true'")).toBe("XXXXXXXXXX");
  });

  it("refuses a reveal flag that is not true or false", async () => {
    expect(await failure(CARD.number, "card_mask: 'yes'")).toContain("card_mask needs true or false");
  });
});

describe("card_bin: separator_char = ''", () => {
  it("gives the first 8 digits of a number of 16 digits or more, and 6 of a shorter one", async () => {
    expect(await evaluated(CARD.number, "card_bin")).toBe("36227206");
    expect(await evaluated("378282246310005", "card_bin")).toBe("378282");
  });

  it("leaves the separator out of the BIN and of the count", async () => {
    expect(await evaluated("4242-4242-4242-4242", "card_bin: '-'")).toBe("42424242");
    expect(await evaluated("3782 822463 10005", "card_bin: ' '")).toBe("378282");
  });

  it("refuses a number no longer than its BIN", async () => {
    expect(await failure("975310", "card_bin")).toContain("card_bin needs a card number longer than its BIN");
  });
});

describe("card_exp: date_expression", () => {
  it("writes a card's expiration in every documented format", async () => {
    const formats = {
      MM: "10",
      MMYY: "1028",
      YYYY: "2028",
      "YYYY-MM": "2028-10",
      "YYYY/MM": "2028/10",
      "MM/YY": "10/28",
      "MM/YYYY": "10/2028",
      MM_YYYY: "10_2028",
      "MM-YYYY": "10-2028",
    };
    const token = await createToken(tenant.key, { type: "token", data: CARD });
    const body = Object.fromEntries(Object.keys(formats).map((format) => [format, `{{ ${token.id} | card_exp: '${format}' }}`]));
    const reply = await call("POST", "/detokenize", { key: tenant.key, body });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual(formats);
  });

  it("writes a one-digit month with a leading zero", async () => {
    expect(await evaluated({ ...CARD, expiration_month: 3 }, "card_exp: 'MM/YY'")).toBe("03/28");
  });

  it("refuses a format with other placeholders", async () => {
    expect(await failure(CARD, "card_exp: 'DD/MM'", CARD.number)).toContain("card_exp needs a format of MM, YY, YYYY and separators");
  });

  it("refuses data without a valid expiration", async () => {
    const message = await failure({ number: CARD.number, expiration_month: 13, expiration_year: 2028 }, "card_exp: 'MM'", CARD.number);
    expect(message).toContain("card_exp needs a card whose expiration_month is a whole number from 1 to 12");
    expect(await failure("secret-4242", "card_exp: 'MM'")).toContain("card_exp needs a card whose expiration_month");
  });
});

describe("to_boolean, to_number, to_string", () => {
  // Detokenization writes a number or boolean result as text; json_stringify shows the type.
  it("to_boolean reads true and false in any case, booleans and numbers", async () => {
    expect(await evaluated({ yes: "true", no: "FALSE" }, "json: '$.yes' | to_boolean | json_stringify")).toBe("true");
    expect(await evaluated({ yes: "true", no: "FALSE" }, "json: '$.no' | to_boolean | json_stringify")).toBe("false");
    expect(await evaluated(0, "to_boolean | json_stringify")).toBe("false");
  });

  it("to_number reads integers and decimals", async () => {
    expect(await evaluated("42", "to_number | json_stringify")).toBe("42");
    expect(await evaluated(" 3.14159 ", "to_number | json_stringify")).toBe("3.14159");
    expect(await evaluated(-7, "to_number | json_stringify")).toBe("-7");
  });

  it("to_string writes numbers and booleans as text", async () => {
    expect(await evaluated(12.5, "to_string | json_stringify")).toBe('"12.5"');
    expect(await evaluated(true, "to_string | json_stringify")).toBe('"true"');
    expect(await evaluated("foo", "to_string")).toBe("foo");
  });

  it("each gives null for null", async () => {
    for (const filter of ["to_boolean", "to_number", "to_string"]) {
      expect(await masked({ a: 1 }, { v: `{{ data.missing | ${filter} }}` })).toEqual({ v: null });
    }
  });

  it("each refuses a value it cannot convert (400), without echoing it", async () => {
    expect(await failure("secret-text", "to_number")).toContain("to_number needs a number or numeric text");
    expect(await failure("secret-text", "to_boolean")).toContain("to_boolean needs a boolean, a number or the text true or false");
    expect(await failure({ secret: "text" }, "to_string", "text")).toContain("to_string cannot convert an object or array");
  });
});

describe("alias_preserve_format: reveal_first_length = 0, reveal_last_length = 0", () => {
  it("replaces digits with random digits and letters with random letters of the same case, keeping the rest", async () => {
    const alias = (await evaluated("ABC12345def-6789", "alias_preserve_format")) as string;
    expect(alias).toMatch(/^[A-Z]{3}\d{5}[a-z]{3}-\d{4}$/);
    expect(alias).not.toBe("ABC12345def-6789");
  });

  it("reveals the first and last characters asked for", async () => {
    expect(await evaluated("ABC12345DEF67890", "alias_preserve_format: 3, 5")).toMatch(/^ABC\d{5}[A-Z]{3}67890$/);
    expect(await evaluated("111-22-3333", "alias_preserve_format: 0, 4")).toMatch(/^\d{3}-\d{2}-3333$/);
  });

  it("reveals nothing when the characters asked for cover the value", async () => {
    const alias = (await evaluated("1234", "alias_preserve_format: 2, 2")) as string;
    expect(alias).toMatch(/^\d{4}$/);
    expect(alias).not.toBe("1234");
  });

  it("draws a new alias each time", async () => {
    const token = await createToken(tenant.key, { type: "token", data: "1234567890123456" });
    // Three different sources: one expression is evaluated once per request.
    const body = ["", ": 0", ": 0, 0"].map((args) => `{{ ${token.id} | alias_preserve_format${args} }}`);
    const reply = await call("POST", "/detokenize", { key: tenant.key, body });
    expect(new Set(reply.body).size).toBe(3);
  });

  it("gives a random UUID for a value with nothing to randomise", async () => {
    expect(await evaluated("--", "alias_preserve_format")).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe("alias_preserve_length: reveal_first_length = 0, reveal_last_length = 0", () => {
  it("replaces every character, separators too, with a random letter or digit", async () => {
    const alias = (await evaluated("john.doe@x", "alias_preserve_length")) as string;
    expect(alias).toMatch(/^[a-z0-9]{10}$/);
  });

  it("reveals the first and last characters asked for", async () => {
    expect(await evaluated("ABC12345DEF67890", "alias_preserve_length: 3, 5")).toMatch(/^ABC[a-z0-9]{8}67890$/);
  });
});

describe("alias_card: reveal_bin = false, reveal_last4 = false", () => {
  it("makes a random Luhn-valid number of the same length", async () => {
    const alias = (await evaluated(CARD.number, "alias_card")) as string;
    expect(alias).toMatch(/^\d{16}$/);
    expect(alias).not.toBe(CARD.number);
    expect(passesLuhn(alias)).toBe(true);
  });

  it("keeps the BIN and last four on request", async () => {
    for (const [filters, pattern] of [
      ["alias_card: 'true', 'false'", /^36227206\d{8}$/],
      ["alias_card: 'true', 'true'", /^36227206\d{4}5567$/],
      ["alias_card: 'false', 'true'", /^\d{12}5567$/],
      ["alias_card: true, true", /^36227206\d{4}5567$/],
    ] as const) {
      const alias = (await evaluated(CARD.number, filters)) as string;
      expect(alias).toMatch(pattern);
      expect(passesLuhn(alias)).toBe(true);
    }
  });

  it("keeps spaces and dashes where they are", async () => {
    const alias = (await evaluated("3622-7206-2716-5567", "alias_card: 'true', 'true'")) as string;
    expect(alias).toMatch(/^3622-7206-\d{4}-5567$/);
    expect(passesLuhn(alias)).toBe(true);
    expect(await evaluated("3782 822463 10005", "alias_card: true")).toMatch(/^3782 82\d{4} \d{5}$/);
  });

  it("refuses a number that is not digits, spaces and dashes", async () => {
    expect(await failure("4242/4242", "alias_card")).toContain("alias_card needs a card number of digits, spaces and dashes");
  });

  it("refuses a number with fewer than two digits it does not reveal", async () => {
    expect(await failure("12345678901", "alias_card: true, true")).toContain("alias_card needs a card number with at least two digits");
  });
});

describe("text filters", () => {
  it("last4 gives the last four characters, separators included", async () => {
    expect(await masked("123-45-6789", "{{ data | last4 }}")).toBe("6789");
    expect(await masked("12", "{{ data | last4 }}")).toBe("12");
  });

  it("remove removes every occurrence", async () => {
    expect(await masked("12-34-56", "{{ data | remove: '-' }}")).toBe("123456");
  });

  it("replace with one argument acts as remove", async () => {
    expect(await masked("12-34-56", "{{ data | replace: '-' }}")).toBe("123456");
  });

  it("replace with two arguments replaces every occurrence", async () => {
    expect(await masked("12-34-56", "{{ data | replace: '-', '.' }}")).toBe("12.34.56");
  });

  it("stringify and json_stringify give JSON with sorted keys", async () => {
    expect(await masked({ b: 1, a: [true, null] }, "{{ data | stringify }}")).toBe('{"a":[true,null],"b":1}');
    expect(await evaluated({ b: 1, a: 2 }, "json_stringify")).toBe('{"a":2,"b":1}');
    expect(await evaluated("x", "json_stringify")).toBe('"x"');
  });

  it("pad_left and pad_right pad to a length", async () => {
    expect(await masked("42", "{{ data | pad_left: 5, '0' }}")).toBe("00042");
    expect(await masked("42", "{{ data | pad_right: 4 }}|")).toBe("42  |");
    expect(await masked("1234", "{{ data | pad_left: 2, '0' }}")).toBe("1234");
  });

  it("json_stringify, pad_left and pad_right give null for null", async () => {
    for (const filter of ["json_stringify", "pad_left: 4, '0'", "pad_right: 4, '0'"]) {
      expect(await masked({ a: 1 }, { v: `{{ data.missing | ${filter} }}` })).toEqual({ v: null });
    }
  });

  it("pad_left refuses a length over 1000", async () => {
    expect(await failure("secret-42", "pad_left: 100000")).toContain("pad_left needs a length between 0 and 1000");
  });

  it("padding is charged to the evaluation's output budget", async () => {
    const reply = await call("POST", "/tokens", {
      key: tenant.key,
      body: { type: "token", data: "x", mask: "{{ data | pad_left: 1000 }}{{ data | pad_right: 1000 }}" },
    });
    expect(expectProblem(reply, 400).errors?.mask?.[0]).toContain("output");
  });
});
