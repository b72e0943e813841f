/*
 * What a frame sends as a token id: the vault's rule (tokenIdProblem in src/tokens/id-format.ts, its
 * twin, which the frame cannot import; test/elements/token-id.test.ts holds the two together), and
 * not only dots, which a URL path reads as a step (`/tokens/.` is `/tokens/`, the list of tokens).
 */

const MIN_LENGTH = 3;
const MAX_LENGTH = 400;
const FORBIDDEN = "#/\\+?[]|&=%<>{}^";
const CONTROL = /[\u0000-\u001f\u007f]/;

export function isTokenId(id: unknown): id is string {
  return (
    typeof id === "string" &&
    id.length >= MIN_LENGTH &&
    id.length <= MAX_LENGTH &&
    id.trim() === id &&
    !CONTROL.test(id) &&
    ![...id].some((character) => FORBIDDEN.includes(character)) &&
    !/^\.+$/.test(id)
  );
}
