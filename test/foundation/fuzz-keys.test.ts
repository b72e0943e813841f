import { fuzzGroup } from "../support/fuzz";

// The "keys" operations of the served OpenAPI document (the operator's keyring, the tenants' client encryption keys,
// documents), fuzzed (test/support/fuzz.ts).
await fuzzGroup("keys");
