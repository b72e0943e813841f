import { fuzzGroup } from "../support/fuzz";

// The wallets' operations of the served OpenAPI document (Apple Pay's), fuzzed (test/support/fuzz.ts).
await fuzzGroup("wallets");
