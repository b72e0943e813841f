/*
 * What the generated parser (grammar/search.peggy) returns: the query as written, with the column
 * of each part so that check.ts can say where a field or value is wrong.
 */

export type SyntaxNode = SyntaxTerm | SyntaxRange | SyntaxAnd | SyntaxOr | SyntaxNot | SyntaxGroup;

export interface SyntaxValue {
  /** The value with quotes removed and escapes resolved. */
  text: string;
  quoted: boolean;
  /** The value exactly as written. */
  raw: string;
  column: number;
  /** The unescaped `*` and `?` of the value: where they are in `text` and in the query. */
  wildcards: { index: number; column: number }[];
}

export interface SyntaxTerm {
  kind: "term";
  field: string;
  column: number;
  value: SyntaxValue;
}

export interface SyntaxBound {
  value: SyntaxValue;
  inclusive: boolean;
}

export interface SyntaxRange {
  kind: "range";
  field: string;
  column: number;
  /** Null for `*`, an open side. */
  from: SyntaxBound | null;
  to: SyntaxBound | null;
}

export interface SyntaxAnd {
  kind: "and";
  operands: SyntaxNode[];
}

export interface SyntaxOr {
  kind: "or";
  operands: SyntaxNode[];
}

export interface SyntaxNot {
  kind: "not";
  column: number;
  operand: SyntaxNode;
}

export interface SyntaxGroup {
  kind: "group";
  column: number;
  query: SyntaxNode;
}
