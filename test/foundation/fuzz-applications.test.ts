import { fuzzGroup } from "../support/fuzz";

// The "applications" operations of the served OpenAPI document (applications, their keys, sessions), fuzzed (test/support/fuzz.ts).
await fuzzGroup("applications");
