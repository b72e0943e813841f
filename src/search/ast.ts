/*
 * A checked search query: every field is known and every value valid. Values are kept as written
 * (case included); the compiler folds case where the field is case-insensitive.
 */

/** Fields matched exactly against a column of the token. */
export const EXACT_FIELDS = ["id", "type", "fingerprint", "created_by", "modified_by"] as const;
export type ExactField = (typeof EXACT_FIELDS)[number];

export const DATE_FIELDS = ["created_at", "modified_at"] as const;
export type DateField = (typeof DATE_FIELDS)[number];

export type Query = Term | Range | And | Or | Not;

export type Term = ExactTerm | DataTerm | ContainerTerm | MetadataTerm | DateTerm;

export interface ExactTerm {
  kind: "term";
  field: ExactField;
  value: string;
}

/** Matches a token whose evaluated search indexes hold the value. */
export interface DataTerm {
  kind: "term";
  field: "data";
  value: string;
}

export interface ContainerTerm {
  kind: "term";
  field: "container";
  /** A container path; with `subtree` it also stands for every container below it. */
  value: string;
  subtree: boolean;
}

export interface MetadataTerm {
  kind: "term";
  field: "metadata";
  key: string;
  value: string;
}

/** A single date or date-time: the day, minute, second or instant it names. */
export interface DateTerm {
  kind: "term";
  field: DateField;
  value: string;
}

export interface Range {
  kind: "range";
  field: DateField;
  /** Null for an open side (`*`). */
  from: Bound | null;
  to: Bound | null;
}

export interface Bound {
  value: string;
  inclusive: boolean;
}

export interface And {
  kind: "and";
  operands: Query[];
}

export interface Or {
  kind: "or";
  operands: Query[];
}

export interface Not {
  kind: "not";
  operand: Query;
}

export function isDateField(field: string): field is DateField {
  return (DATE_FIELDS as readonly string[]).includes(field);
}

export function isExactField(field: string): field is ExactField {
  return (EXACT_FIELDS as readonly string[]).includes(field);
}

/** Every term of the query, left to right. */
export function termsOf(query: Query): Term[] {
  switch (query.kind) {
    case "term":
      return [query];
    case "range":
      return [];
    case "not":
      return termsOf(query.operand);
    case "and":
    case "or":
      return query.operands.flatMap(termsOf);
  }
}

/** The distinct values the query's `data:` terms compare: each one tests a guess against every token in reach. */
export function dataValuesOf(query: Query): string[] {
  return [...new Set(termsOf(query).flatMap((term) => (term.field === "data" ? [term.value] : [])))];
}

/** What `data:` values become in the audit log, which never holds a searched value. */
export const REDACTED = "[redacted]";

/** The query written back out, with every `data:` value replaced by REDACTED: what the audit log records. */
export function redactedQuery(query: Query): string {
  const quoted = (value: string) => JSON.stringify(value);
  switch (query.kind) {
    case "term":
      if (query.field === "data") return `data:${REDACTED}`;
      if (query.field === "metadata") return `metadata.${query.key}:${quoted(query.value)}`;
      if (query.field === "container") return `container:${quoted(query.value)}${query.subtree ? "*" : ""}`;
      return `${query.field}:${quoted(query.value)}`;
    case "range": {
      const bound = (side: Bound | null) => (side === null ? "*" : quoted(side.value));
      const open = query.from?.inclusive === false ? "{" : "[";
      const close = query.to?.inclusive === false ? "}" : "]";
      return `${query.field}:${open}${bound(query.from)} TO ${bound(query.to)}${close}`;
    }
    case "not":
      return `NOT (${redactedQuery(query.operand)})`;
    case "and":
    case "or":
      return `(${query.operands.map(redactedQuery).join(query.kind === "and" ? " AND " : " OR ")})`;
  }
}
