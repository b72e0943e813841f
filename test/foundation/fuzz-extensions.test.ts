import { fuzzGroup } from "../support/fuzz";

// The "extensions" operations of the served OpenAPI document, fuzzed (test/support/fuzz.ts).
await fuzzGroup("extensions");
