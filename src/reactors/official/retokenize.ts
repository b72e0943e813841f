import type { OfficialFormula } from "./formula";

/** Copies a value into a new token in the reactor's container, without it passing through the caller. */
export const retokenize: OfficialFormula = {
  id: "7fcdae69-b80a-4d38-8505-bfbc68e29706",
  name: "Re-tokenize into a container",
  description:
    "Creates a new token holding `data` (typically {{ <token id> }}) in the reactor's configured container, " +
    "with the given `type` (default token) and optional `metadata` object. The reactor's application needs " +
    "token:create on that container.",
  status: "verified",
  configuration: [{ name: "container", description: "Container of the new tokens, like /pci/high/", type: "string" }],
  request_parameters: [
    { name: "data", description: "The value to store, usually a token reference", type: "string", optional: false },
    { name: "type", description: "Token type of the new token (default token)", type: "string", optional: true },
  ],
  code: `"use strict";

const { BadRequestError } = require("@token-vault/errors");

module.exports = async function (req) {
  const { args, configuration } = req;
  const metadata = args.metadata;
  if (metadata !== undefined && (typeof metadata !== "object" || metadata === null || Array.isArray(metadata))) {
    throw new BadRequestError("metadata must be an object of strings");
  }
  const token = { type: args.type || "token", data: args.data, containers: [configuration.container] };
  if (metadata !== undefined) token.metadata = metadata;
  return { tokenize: { token }, raw: { container: configuration.container } };
};
`,
};
