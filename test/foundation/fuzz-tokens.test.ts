import { fuzzGroup } from "../support/fuzz";

// The "tokens" operations of the served OpenAPI document, fuzzed (test/support/fuzz.ts).
await fuzzGroup("tokens");
