/** A broken or failing expression; the message says why and never holds token data. */
export class ExpressionError extends Error {}

/** An evaluation ran out of its budget: every later expression of the same evaluation would too. */
export class BudgetExceededError extends ExpressionError {}
