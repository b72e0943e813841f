import { type Node, type Options, type Program, parse } from "acorn";
import { SANDBOX } from "../limits";

/** Largest script a tenant may save. */
export const MAX_CODE_LENGTH = SANDBOX.codeMaxLength;

/** Modules tenant code may require or import, besides the errors module. */
export const ALLOWED_BUILTINS = ["crypto", "buffer", "querystring", "url", "util", "stream"] as const;

/** The module tenant code requires for the typed errors it may throw. */
export const ERRORS_MODULE = "@token-vault/errors";
/** The same module under the original product's package name, which existing transforms and formulas require. */
export const ORIGINAL_ERRORS_MODULE = "@basis-theory/basis-theory-reactor-formulas-sdk-js";
const ERRORS_MODULE_NAMES: readonly string[] = [ERRORS_MODULE, ORIGINAL_ERRORS_MODULE];

/** Called by the instrumented code at every loop iteration and function entry. */
const TICK = "$$vaultTick";
/** Global that holds the check (see the prelude); the tenant module keeps it in a local. */
export const TICK_GLOBAL = "$$vaultTickGlobal";
/** Global that resolves `require` inside the sandbox (see prelude). */
export const REQUIRE = "$$vaultRequire";
const RESERVED_PREFIX = "$$vault";

export type ModuleFormat = "commonjs" | "esm";

/** A problem with the code at a position: line and column are 1-based. */
export class CodeProblem extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
  }
}

interface ParsedCode {
  format: ModuleFormat;
  program: Program;
}

const BASE_OPTIONS: Options = { ecmaVersion: "latest", locations: true, allowHashBang: true };

/**
 * Reads tenant code: an ES module when it imports or exports, otherwise Node style CommonJS.
 * When neither reading parses, the reading that got further names the error.
 */
export function parseCode(code: string): ParsedCode {
  let moduleError: unknown;
  try {
    const program = parse(code, { ...BASE_OPTIONS, sourceType: "module" });
    if (program.body.some(isModuleDeclaration)) return { format: "esm", program };
  } catch (error) {
    moduleError = error;
  }
  try {
    return {
      format: "commonjs",
      program: parse(code, { ...BASE_OPTIONS, sourceType: "script", allowReturnOutsideFunction: true }),
    };
  } catch (scriptError) {
    const furthest = positionOf(moduleError) > positionOf(scriptError) ? moduleError : scriptError;
    throw syntaxProblem(furthest);
  }
}

/** Everything checked before the code is accepted: constructs the sandbox refuses and the export. */
export function checkCode({ format, program }: ParsedCode): void {
  walk(program, (node) => {
    const problem = refusedConstruct(node);
    if (problem) throw problemAt(node, problem);
  });
  if (format === "esm") {
    checkDefaultExport(program);
  } else {
    checkModuleExports(program);
    checkRequireNotRedeclared(program);
  }
}

/**
 * The code as it runs in the sandbox: a budget check at the top of every loop body and function
 * body, so that a runaway script can be stopped where the runtime does not enforce a CPU limit;
 * and, for CommonJS, a `require` that resolves only the allowed modules.
 */
export function instrumentCode(code: string, { format, program }: ParsedCode): string {
  const insertions: { at: number; text: string; order: number }[] = [];
  let sequence = 0;
  const wrap = (node: Node, before: string, after: string) => {
    sequence += 1;
    insertions.push({ at: node.start, text: before, order: sequence });
    // Closings at the same position nest: the inner node's closing comes first.
    insertions.push({ at: node.end, text: after, order: -sequence });
  };
  const insertAt = (at: number, text: string) => {
    sequence += 1;
    insertions.push({ at, text, order: sequence });
  };

  walk(program, (node) => {
    const body = loopBody(node) ?? functionBody(node);
    if (!body) return;
    if (body.type === "BlockStatement") insertAt(afterDirectives(body), `${TICK}();`);
    else if (loopBody(node)) wrap(body, `{${TICK}();`, "}");
    else wrap(body, `(${TICK}(), `, ")");
  });

  insertions.sort((a, b) => a.at - b.at || a.order - b.order);
  let instrumented = "";
  let cursor = 0;
  for (const { at, text } of insertions) {
    instrumented += code.slice(cursor, at) + text;
    cursor = at;
  }
  instrumented += code.slice(cursor);
  return `${instrumented}\n;${supportDeclarations(format).join("\n")}\n`;
}

/**
 * Hoisted, so they exist before the first line runs. The check is cached in a module local because
 * a CommonJS module in workerd resolves globals through a slow dynamic scope. The `require`
 * declaration shadows the runtime's for the whole module. Tenant code cannot redeclare these: the
 * `$$vault` names are reserved, and `require` may not be declared with let, const or class.
 */
function supportDeclarations(format: ModuleFormat): string[] {
  const declarations = [`function ${TICK}() { return (${TICK}Cached || (${TICK}Cached = ${TICK_GLOBAL}))(); }`, `var ${TICK}Cached;`];
  if (format === "commonjs") declarations.push(`function require(specifier) { return ${REQUIRE}(specifier); }`);
  return declarations;
}

function refusedConstruct(node: Node): string | null {
  switch (node.type) {
    case "Identifier":
      return (node as Node & { name: string }).name.startsWith(RESERVED_PREFIX)
        ? `names starting with ${RESERVED_PREFIX} are reserved by the sandbox`
        : null;
    case "WithStatement":
      return "with statements are not supported";
    case "ImportExpression":
      return "dynamic import() is not supported; use require or a static import";
    case "ImportDeclaration":
    case "ExportNamedDeclaration":
    case "ExportAllDeclaration": {
      const source = (node as Node & { source?: { value: unknown } | null }).source;
      return source && !isAllowedModule(String(source.value)) ? unknownModuleMessage(String(source.value)) : null;
    }
    default:
      return null;
  }
}

function isAllowedModule(specifier: string): boolean {
  const name = specifier.replace(/^node:/, "");
  return ERRORS_MODULE_NAMES.includes(specifier) || (ALLOWED_BUILTINS as readonly string[]).includes(name);
}

export function unknownModuleMessage(specifier: string): string {
  return `cannot use module "${specifier}": tenant code may use only ${[...ALLOWED_BUILTINS, ...ERRORS_MODULE_NAMES].join(", ")}`;
}

const NOT_FUNCTIONS = new Set(["ObjectExpression", "ArrayExpression", "Literal", "TemplateLiteral", "ClassExpression", "ClassDeclaration"]);

function checkDefaultExport(program: Program): void {
  const declaration = program.body.find((node) => node.type === "ExportDefaultDeclaration");
  if (!declaration) throw new CodeProblem("the module must export a function: export default async function (req) {…}", 1, 1);
  if (NOT_FUNCTIONS.has(declaration.declaration.type)) throw problemAt(declaration.declaration, "the default export must be a function");
}

function checkModuleExports(program: Program): void {
  const assignments: Node[] = [];
  walk(program, (node) => {
    if (node.type === "AssignmentExpression" && isModuleExportsTarget((node as Node & { left: Node }).left)) assignments.push(node);
  });
  if (assignments.length === 0) {
    throw new CodeProblem("the code must export a function: module.exports = async function (req) {…}", 1, 1);
  }
  for (const assignment of assignments) {
    const value = (assignment as Node & { right: Node }).right;
    if (NOT_FUNCTIONS.has(value.type)) throw problemAt(value, "module.exports must be a function");
  }
}

/** A lexical `require` at the top level would clash with the sandbox's own declaration. */
function checkRequireNotRedeclared(program: Program): void {
  for (const statement of program.body) {
    const declared =
      statement.type === "VariableDeclaration" && statement.kind !== "var"
        ? statement.declarations.map((declarator) => declarator.id)
        : statement.type === "ClassDeclaration" && statement.id
          ? [statement.id]
          : [];
    const clash = declared.find((id) => id.type === "Identifier" && id.name === "require");
    if (clash) throw problemAt(clash, "require is provided by the sandbox and cannot be declared with let, const or class");
  }
}

/** `module.exports`, `module.exports.default` or `exports.default`. */
function isModuleExportsTarget(node: Node): boolean {
  if (node.type !== "MemberExpression") return false;
  const { object, property, computed } = node as Node & { object: Node; property: Node; computed: boolean };
  const propertyName = computed ? (property as Node & { value?: unknown }).value : (property as Node & { name?: string }).name;
  if (object.type === "Identifier") {
    const objectName = (object as Node & { name: string }).name;
    return (objectName === "module" && propertyName === "exports") || (objectName === "exports" && propertyName === "default");
  }
  return propertyName === "default" && isModuleExportsTarget(object);
}

function loopBody(node: Node): Node | null {
  switch (node.type) {
    case "ForStatement":
    case "ForInStatement":
    case "ForOfStatement":
    case "WhileStatement":
    case "DoWhileStatement":
      return (node as Node & { body: Node }).body;
    default:
      return null;
  }
}

function functionBody(node: Node): Node | null {
  switch (node.type) {
    case "FunctionDeclaration":
    case "FunctionExpression":
    case "ArrowFunctionExpression":
      return (node as Node & { body: Node }).body;
    default:
      return null;
  }
}

/** Right after the opening brace and any directive prologue, so "use strict" stays a directive. */
function afterDirectives(block: Node): number {
  let end = block.start + 1;
  for (const statement of (block as Node & { body: (Node & { directive?: string })[] }).body) {
    if (statement.directive === undefined) break;
    end = statement.end;
  }
  return end;
}

function isModuleDeclaration(node: Node): boolean {
  return node.type === "ImportDeclaration" || node.type.startsWith("Export");
}

/** Visits every node of the tree, parents before children. */
function walk(node: Node, visit: (node: Node) => void): void {
  visit(node);
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item)) walk(item, visit);
    } else if (isNode(value)) {
      walk(value, visit);
    }
  }
}

function isNode(value: unknown): value is Node {
  return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
}

function problemAt(node: Node, message: string): CodeProblem {
  const start = node.loc!.start;
  return new CodeProblem(message, start.line, start.column + 1);
}

function positionOf(error: unknown): number {
  return typeof (error as { pos?: unknown })?.pos === "number" ? (error as { pos: number }).pos : -1;
}

function syntaxProblem(error: unknown): CodeProblem {
  const loc = (error as { loc?: { line: number; column: number } }).loc;
  if (!(error instanceof SyntaxError) || !loc) throw error;
  return new CodeProblem(`syntax error: ${error.message.replace(/ \(\d+:\d+\)$/, "")}`, loc.line, loc.column + 1);
}
