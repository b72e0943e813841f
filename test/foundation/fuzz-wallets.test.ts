import { fuzzGroup } from "../support/fuzz";

// The wallets' operations of the served OpenAPI document (Google Pay's and Apple Pay's token decryption and merchant registrations), fuzzed (test/support/fuzz.ts).
await fuzzGroup("wallets");
