/** A broken or failing expression; the message says why and never holds token data. */
export class ExpressionError extends Error {}
