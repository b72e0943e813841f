import { applePayReference, applePayShownLessNow, isApplePayReference, useApplePayTokens } from "../apple-pay/tokens";
import { holdsPermission, type Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { addFieldError, type FieldErrors, ForbiddenError, type RevealedValues, type ShownToken, ValidationError } from "../errors";
import { googlePayReference, googlePayShownLessNow, isGooglePayReference, useGooglePayResources } from "../google-pay/service";
import { fieldPath } from "../http/validation";
import { TOKENS } from "../limits";
import { intentReference, shownLessNow as intentsShownLessNow, useTokenIntents } from "../token-intents/use";
import { ExpressionError } from "../tokens/errors";
import { Evaluation, expressionProblem, WorkBudget } from "../tokens/expressions";
import { normalTokenId, tokenIdProblem } from "../tokens/id-format";
import { useTokens, useWholeTokens } from "../tokens/use";

/** More expressions than this in one request is refused: each one is a token read and a render. */
export const MAX_REFERENCES = TOKENS.maxReferences;
const MAX_DETOKENIZED_CHARACTERS = TOKENS.maxDetokenizedCharacters;

const EXPRESSION = /\{\{([\s\S]*?)\}\}/g;
const EXPRESSION_ECHO_LIMIT = 60;

/**
 * What an expression may read besides a token, named before its id (`{{ token_intent: <id> | … }}`):
 * how a request's record names one, and how the principal reads those a request names.
 */
const RESOURCES = {
  token_intent: { reference: intentReference, use: useTokenIntents, what: "token intent" },
  apple_pay: { reference: applePayReference, use: useApplePayTokens, what: "Apple Pay token" },
  google_pay: { reference: googlePayReference, use: useGooglePayResources, what: "Google Pay resource" },
} as const;
type ResourceKind = keyof typeof RESOURCES;

/**
 * One `{{ <token id> | filter: args | … }}`: the token it reads and, when it has filters, the Liquid
 * source that applies them to the token's data (`{{ data | filter: args | … }}`). Or one
 * `{{ token_intent: <id> | … }}` (or another of RESOURCES), whose filters apply to the resource as
 * its own GET shows it (a token intent's data under `data`).
 */
interface Expression {
  /** As the caller wrote it, for error messages. */
  text: string;
  /** What it reads: a token's id, or a resource's reference (RESOURCES' `reference`). */
  reads: string;
  /** The resource, when it reads one. */
  resource?: { kind: ResourceKind; id: string };
  source: string | null;
}

/** What `{{ encrypted … }}` reads when the call carries client-encrypted data (src/proxies/encrypted-header.ts). */
const ENCRYPTED = "encrypted";

/** `token_intent: <id>`, `apple_pay: <id>`, `google_pay: <id>`: as the original interface writes an expression that reads one of RESOURCES. */
const RESOURCE_EXPRESSION = /^\s*(token_intent|apple_pay|google_pay)\s*:([\s\S]*)$/;

/** Its ids are UUIDs, the vault's own. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A string holding expressions, as literal text and expressions in their order. */
type Piece = string | Expression;

interface ParsedText {
  pieces: Piece[];
  expressions: number;
  problems: string[];
}

/** Every string holding `{{`, parsed once per distinct text, and the distinct tokens and resources they read. */
interface Plan {
  texts: Map<string, ParsedText>;
  tokenIds: Set<string>;
  resources: Map<ResourceKind, Set<string>>;
}

/**
 * Replaces every detokenization expression inside the strings of a JSON value with the token's
 * data, as the principal may use it (`token:use`), passed through the expression's filters. Inside
 * a longer string the result is inserted as text (objects as their JSON), so the JSON escaping
 * happens when the value is serialised again; a string that is exactly one expression whose result
 * is an object or array becomes that value. Object keys are left alone.
 *
 * Text (a non-JSON body, a header value) is a JSON string like any other, so the proxy detokenizes
 * its body and headers in one call, with one token lookup. Every expression is parsed (filters
 * included) before any token is read, and each distinct token is read and decrypted once.
 *
 * `principal` null means nobody may detokenize: a value holding expressions is refused with 403.
 * Errors name the JSON path of the string, under `root`. The expressions of one call share one work
 * budget, in proportion to the data they read.
 *
 * `forCaller` false: the principal is not the caller (an open proxy detokenizes as its own
 * application for an anonymous partner, who must not see the data). Then an expression that fails
 * on the data gives null like any other empty result, and nothing tells which one failed: an error
 * that depends on the data would be an oracle of it. Expressions that do not parse are refused either way.
 *
 * `encrypted`: the client-encrypted data a proxy call carries, already decrypted. Expressions whose
 * id is `encrypted` read it instead of a token, and need no principal.
 */
export async function detokenizeJson(
  context: TenantContext,
  principal: Principal | null,
  value: unknown,
  {
    root = "body",
    forCaller = true,
    references = 0,
    encrypted,
  }: { root?: string; forCaller?: boolean; references?: number; encrypted?: unknown } = {},
): Promise<unknown> {
  const plan = planOf(value, root, references);
  // With client-encrypted data at hand, `encrypted` names it rather than a token of that id.
  const readsEncrypted = encrypted !== undefined && plan.tokenIds.delete(ENCRYPTED);
  const readsStored = plan.tokenIds.size > 0 || plan.resources.size > 0;
  if (!readsStored && !readsEncrypted) return value;
  const data = readsStored ? await reveal(context, principal, plan) : new Map<string, unknown>();
  if (readsEncrypted) data.set(ENCRYPTED, encrypted);
  const errors: FieldErrors = {};
  const substitution = new Substitution(plan, data, { root, errors, quiet: !forCaller, revealed: context.revealed });
  const substituted = substitute(value, [], substitution);
  if (Object.keys(errors).length > 0) {
    throw new ValidationError("A detokenization expression could not be evaluated", errors);
  }
  return substituted;
}

/**
 * Parses every expression; refuses too many expressions and invalid ones before anything is read.
 * `references` is how many tokens the request reads besides (a token list's entries).
 */
function planOf(value: unknown, root: string, references: number): Plan {
  const plan: Plan = { texts: new Map(), tokenIds: new Set(), resources: new Map() };
  const errors: FieldErrors = {};
  let count = references;
  walkStrings(value, [], (text, path) => {
    if (!text.includes("{{")) return;
    let parsed = plan.texts.get(text);
    // Past the limit expressions are only counted, so a body full of them costs at most 100 parses.
    count += parsed ? parsed.expressions : (text.match(EXPRESSION)?.length ?? 0);
    if (count > MAX_REFERENCES) return;
    if (!parsed) {
      parsed = parseText(text);
      plan.texts.set(text, parsed);
    }
    if (parsed.problems.length > 0) addFieldError(errors, fieldPath(path, root), ...parsed.problems);
  });
  if (count > MAX_REFERENCES) {
    throw new ValidationError(`At most ${MAX_REFERENCES} token references are allowed in one request; found ${count}`);
  }
  if (Object.keys(errors).length > 0) {
    throw new ValidationError(
      "Invalid detokenization expression: an expression must be {{ <token id> }}, {{ <token id> | <filters> }}, {{ token_intent: <id> | <filters> }}, {{ apple_pay: <id> | <filters> }} or {{ google_pay: <id> | <filters> }}",
      errors,
    );
  }
  for (const { pieces } of plan.texts.values()) {
    for (const piece of pieces) {
      if (typeof piece === "string") continue;
      if (piece.resource === undefined) plan.tokenIds.add(piece.reads);
      else {
        const { kind, id } = piece.resource;
        if (!plan.resources.has(kind)) plan.resources.set(kind, new Set());
        plan.resources.get(kind)!.add(id);
      }
    }
  }
  return plan;
}

function parseText(text: string): ParsedText {
  const parsed: ParsedText = { pieces: [], expressions: 0, problems: [] };
  let at = 0;
  for (const match of text.matchAll(EXPRESSION)) {
    if (match.index > at) parsed.pieces.push(text.slice(at, match.index));
    const expression = parseExpression(match[0], match[1]!);
    if (typeof expression === "string") parsed.problems.push(`invalid detokenization expression ${echo(match[0])}: ${expression}`);
    else parsed.pieces.push(expression);
    parsed.expressions += 1;
    at = match.index + match[0].length;
  }
  if (at < text.length) parsed.pieces.push(text.slice(at));
  return parsed;
}

/**
 * The expression inside the braces, or why it is invalid. Token ids cannot hold `|`, so the id is
 * the text before the first one, trimmed; the rest is a Liquid filter chain, parsed here. After
 * `token_intent:` (or another of RESOURCES) comes that resource's id.
 */
function parseExpression(text: string, inside: string): Expression | string {
  const resource = RESOURCE_EXPRESSION.exec(inside);
  const rest = resource ? resource[2]! : inside;
  const bar = rest.indexOf("|");
  const id = (bar === -1 ? rest : rest.slice(0, bar)).trim();
  let target: Pick<Expression, "reads" | "resource">;
  if (resource) {
    const kind = resource[1] as ResourceKind;
    if (!UUID.test(id)) return `the ${RESOURCES[kind].what} id must be a UUID`;
    target = { reads: RESOURCES[kind].reference(id.toLowerCase()), resource: { kind, id: id.toLowerCase() } };
  } else {
    const idProblem = tokenIdProblem(id);
    if (idProblem !== null) return `the token id ${idProblem}`;
    target = { reads: normalTokenId(id) };
  }
  if (bar === -1) return { text, ...target, source: null };
  const source = `{{ data ${rest.slice(bar)} }}`;
  const problem = expressionProblem(source);
  return problem === null ? { text, ...target, source } : `its filters ${problem}`;
}

/** `{{ token: <id> }}`, the original docs' full token expression: a token whole, as an entry of a token list only. */
const FULL_TOKEN_EXPRESSION = /^\{\{\s*token\s*:\s*([^{}|]*?)\s*\}\}$/;

/**
 * POST /detokenize. A body `{"tokens": [...]}` is the original docs' token list: each entry that is a
 * token id, or a full token expression `{{ token: <id> }}`, is answered with that token whole (as
 * useWholeTokens shows it); every other value, the list's other entries and the body's other members,
 * is detokenized as detokenizeJson does. The entries count against the references of one request.
 */
export async function detokenizeBody(context: TenantContext, principal: Principal, body: unknown): Promise<unknown> {
  const list = tokenListOf(body);
  // Awaited, not returned: workerd reports a rejection adopted one microtask late as unhandled.
  if (list === null || list.references.size === 0) return await detokenizeJson(context, principal, body);
  const errors: FieldErrors = {};
  for (const [index, id] of list.references) {
    const problem = tokenIdProblem(id);
    if (problem !== null) addFieldError(errors, `tokens[${index}]`, `must be a token id or {{ token: <id> }}: the token id ${problem}`);
  }
  if (Object.keys(errors).length > 0) throw new ValidationError("Invalid entry in the token list", errors);
  const others = list.entries.map((entry, index) => (list.references.has(index) ? null : entry));
  const detokenized = (await detokenizeJson(
    context,
    principal,
    { ...list.body, tokens: others },
    { references: list.references.size },
  )) as {
    tokens: unknown[];
  };
  const tokens = await useWholeTokens(context, principal, [...list.references.values()]);
  return {
    ...detokenized,
    tokens: detokenized.tokens.map((entry, index) => {
      const id = list.references.get(index);
      return id === undefined ? entry : tokens.get(id)!;
    }),
  };
}

interface TokenList {
  body: Record<string, unknown>;
  entries: unknown[];
  /** The entries that name a token, by position: the id they name. */
  references: Map<number, string>;
}

/** The body's token list, when the body is an object whose `tokens` is an array. */
function tokenListOf(body: unknown): TokenList | null {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return null;
  const entries = (body as Record<string, unknown>).tokens;
  if (!Array.isArray(entries)) return null;
  const references = new Map<number, string>();
  entries.forEach((entry, index) => {
    if (typeof entry !== "string") return;
    const full = FULL_TOKEN_EXPRESSION.exec(entry);
    if (full) references.set(index, full[1]!);
    else if (!entry.includes("{{")) references.set(index, entry);
  });
  return { body: body as Record<string, unknown>, entries, references };
}

/** What each expression reads: tokens' data by id, resources by their reference. */
async function reveal(context: TenantContext, principal: Principal | null, plan: Plan): Promise<Map<string, unknown>> {
  if (principal === null) {
    throw new ForbiddenError("Token references cannot be detokenized here: no application may use tokens for this request");
  }
  // Every way to detokenize needs token:use, an open proxy's application too: a resource's own read permission is not enough.
  if (plan.resources.size > 0 && !holdsPermission(principal, "token:use")) throw ForbiddenError.missing("token:use");
  const tokens = plan.tokenIds.size === 0 ? new Map<string, unknown>() : await useTokens(context, principal, [...plan.tokenIds]);
  for (const [kind, ids] of plan.resources) {
    const { use, reference } = RESOURCES[kind];
    for (const [id, shown] of await use(context, principal, [...ids])) tokens.set(reference(id), shown);
  }
  return tokens;
}

/**
 * Why a fresh detokenization by the principal would now refuse a token or resource an earlier one
 * showed (`shown`: RevealedValues.tokens, by reference), or show less of it; null when it would
 * show each as before. A replayed answer is checked by it.
 */
export async function shownLessNow(
  context: TenantContext,
  principal: Principal,
  shown: Record<string, ShownToken["transform"]>,
): Promise<string | null> {
  const applePay = new Map<string, ShownToken["transform"]>();
  const googlePay = new Map<string, ShownToken["transform"]>();
  const others: Record<string, ShownToken["transform"]> = {};
  for (const [reference, transform] of Object.entries(shown)) {
    if (isApplePayReference(reference)) applePay.set(reference.slice(applePayReference("").length), transform);
    else if (isGooglePayReference(reference)) googlePay.set(reference.slice(googlePayReference("").length), transform);
    else others[reference] = transform;
  }
  return (
    (await applePayShownLessNow(context, principal, applePay)) ??
    (await googlePayShownLessNow(context, principal, googlePay)) ??
    intentsShownLessNow(context, principal, others)
  );
}

/** Visits every string with its path; the path array is reused, so `visit` must not keep it. */
function walkStrings(value: unknown, path: PropertyKey[], visit: (text: string, path: PropertyKey[]) => void): void {
  if (typeof value === "string") {
    visit(value, path);
    return;
  }
  if (value === null || typeof value !== "object") return;
  const entries: [PropertyKey, unknown][] = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
  for (const [key, item] of entries) {
    path.push(key);
    walkStrings(item, path, visit);
    path.pop();
  }
}

type Outcome = { value: unknown } | { problem: string };

interface SubstitutionOptions {
  root: string;
  /** Where failures are recorded, by path. */
  errors: FieldErrors;
  /** Failures give null and are not recorded (see detokenizeJson's `forCaller`). */
  quiet: boolean;
  revealed: RevealedValues;
}

/** The revealed data and the results of the expressions: each distinct expression is evaluated once. */
class Substitution {
  private readonly outcomes = new Map<string, Outcome>();
  private readonly work: WorkBudget;
  /** Characters the values put in so far, and each result's, measured once. */
  private produced = 0;
  private readonly sizes = new Map<string, number>();

  constructor(
    readonly plan: Plan,
    private readonly data: Map<string, unknown>,
    private readonly options: SubstitutionOptions,
  ) {
    this.work = WorkBudget.of([...data.values()]);
  }

  /** The expression's result; a failure is recorded under the path (unless quiet) and gives null. */
  resultOf(expression: Expression, path: PropertyKey[]): unknown {
    const data = this.data.get(expression.reads);
    if (expression.source === null) return this.counted(expression.reads, data);
    const key = `${expression.source}\u0000${expression.reads}`;
    let outcome = this.outcomes.get(key);
    if (!outcome) {
      outcome = this.evaluate(expression, data);
      if ("value" in outcome) this.options.revealed.add(outcome.value);
      this.outcomes.set(key, outcome);
    }
    if ("value" in outcome) return this.counted(key, outcome.value);
    if (!this.options.quiet) addFieldError(this.options.errors, fieldPath(path, this.options.root), outcome.problem);
    return null;
  }

  /** The value, once what the values add up to is within MAX_DETOKENIZED_CHARACTERS (a 400 past it). */
  private counted(key: string, value: unknown): unknown {
    let size = this.sizes.get(key);
    if (size === undefined) {
      size = charactersOf(value);
      this.sizes.set(key, size);
    }
    this.produced += size;
    if (this.produced > MAX_DETOKENIZED_CHARACTERS) {
      throw new ValidationError(`The detokenized values would take more than ${MAX_DETOKENIZED_CHARACTERS} characters`);
    }
    return value;
  }

  private evaluate(expression: Expression, data: unknown): Outcome {
    try {
      return { value: new Evaluation({ data }, this.work).value(expression.source!) };
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      return { problem: `the expression ${echo(expression.text)} ${error.message}` };
    }
  }
}

function substitute(value: unknown, path: PropertyKey[], substitution: Substitution): unknown {
  if (typeof value === "string") {
    const parsed = substitution.plan.texts.get(value);
    return parsed ? substituteText(parsed.pieces, path, substitution) : value;
  }
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    return value.map((item, index) => {
      path.push(index);
      const substituted = substitute(item, path, substitution);
      path.pop();
      return substituted;
    });
  }
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => {
      path.push(key);
      const substituted = substitute(item, path, substitution);
      path.pop();
      return [key, substituted];
    }),
  );
}

function substituteText(pieces: Piece[], path: PropertyKey[], substitution: Substitution): unknown {
  const [only] = pieces;
  if (pieces.length === 1 && typeof only !== "string") {
    const result = substitution.resultOf(only!, path);
    return result !== null && typeof result === "object" ? result : textOf(result);
  }
  return pieces.map((piece) => (typeof piece === "string" ? piece : textOf(substitution.resultOf(piece, path)))).join("");
}

/** About the characters a value takes where it is put: its text, or an object's JSON. */
function charactersOf(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (value === null || value === undefined) return 0;
  return (typeof value === "object" ? JSON.stringify(value) : String(value)).length;
}

/** A result as text inside a string: numbers and booleans as written, objects as JSON, null as nothing. */
function textOf(result: unknown): string {
  if (typeof result === "string") return result;
  if (result === null || result === undefined) return "";
  return typeof result === "object" ? JSON.stringify(result) : String(result);
}

function echo(expression: string): string {
  return expression.length <= EXPRESSION_ECHO_LIMIT ? expression : `${expression.slice(0, EXPRESSION_ECHO_LIMIT)}…`;
}
