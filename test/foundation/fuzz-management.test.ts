import { fuzzGroup } from "../support/fuzz";

// The "management" operations of the served OpenAPI document, fuzzed (test/support/fuzz.ts).
await fuzzGroup("management");
