import { cardAccountUpdater } from "./card-account-updater";
import { cardDetails } from "./card-details";
import type { OfficialFormula } from "./formula";
import { retokenize } from "./retokenize";
import { usBankAccount } from "./us-bank-account";

export type { OfficialFormula } from "./formula";

/** Every official formula the service ships; the seed makes the database match this list. */
export const OFFICIAL_FORMULAS: readonly OfficialFormula[] = [cardDetails, retokenize, usBankAccount, cardAccountUpdater];
