import type { OfficialFormula } from "./formula";

/**
 * Validates and normalises a US routing and account number pair (ABA checksum, Federal Reserve
 * prefix, account length), and can store the normalised pair as tokens.
 */
export const usBankAccount: OfficialFormula = {
  id: "aefe9a13-4f05-49d4-b77e-688000fed530",
  name: "US bank account validation",
  description:
    "Strips spaces, dashes and dots from a routing and account number pair, checks the routing number's " +
    "ABA checksum and Federal Reserve prefix and the account number's length, and returns the verdict with " +
    "the normalised routing number and the account's last four digits. With configuration tokenize = true, " +
    "a valid pair is also stored as us_bank_routing_number and us_bank_account_number tokens (the reactor's " +
    "application needs token:create).",
  status: "verified",
  configuration: [{ name: "tokenize", description: "Store a valid, normalised pair as tokens", type: "boolean" }],
  request_parameters: [
    { name: "routing_number", description: "Nine-digit ABA routing number", type: "string", optional: false },
    { name: "account_number", description: "Account number, usually a token reference", type: "string", optional: false },
  ],
  code: String.raw`"use strict";

// First two digits: 00 US government, 01-12 Federal Reserve banks, 21-32 thrifts, 61-72 electronic, 80 traveller's cheques.
function validPrefix(routing) {
  const prefix = Number(routing.slice(0, 2));
  return prefix <= 12 || (prefix >= 21 && prefix <= 32) || (prefix >= 61 && prefix <= 72) || prefix === 80;
}

function passesAbaChecksum(routing) {
  const d = Array.from(routing, Number);
  return (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])) % 10 === 0;
}

function routingProblem(routing) {
  if (!/^\d{9}$/.test(routing)) return "must be 9 digits";
  if (!passesAbaChecksum(routing)) return "fails the ABA checksum";
  if (!validPrefix(routing)) return "does not start with a Federal Reserve routing symbol";
  return null;
}

function accountProblem(account) {
  return /^\d{3,17}$/.test(account) ? null : "must be 3 to 17 digits";
}

module.exports = async function (req) {
  const routing = req.args.routing_number.replace(/[\s.-]/g, "");
  const account = req.args.account_number.replace(/[\s.-]/g, "");
  const problems = {};
  const routingIssue = routingProblem(routing);
  const accountIssue = accountProblem(account);
  if (routingIssue) problems.routing_number = routingIssue;
  if (accountIssue) problems.account_number = accountIssue;
  const valid = !routingIssue && !accountIssue;
  const result = {
    raw: {
      valid,
      routing_number: routingIssue ? null : routing,
      account_number_last4: accountIssue ? null : account.slice(-4),
      problems,
    },
  };
  if (valid && req.configuration.tokenize) {
    result.tokenize = {
      routing_number: { type: "us_bank_routing_number", data: routing },
      account_number: { type: "us_bank_account_number", data: account },
    };
  }
  return result;
};
`,
};
