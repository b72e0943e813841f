// Plain JavaScript so that both the tests inside workerd and the Node bench and load scripts import
// it; the JSDoc below types it for TypeScript.

/**
 * @template [T=any]
 * @typedef {object} Reply
 * @property {number} status
 * @property {Headers} headers
 * @property {string} text The body as text.
 * @property {T} body The body parsed as JSON when it is JSON, else its text; null when empty.
 */

/**
 * Reads a fetch Response once, whatever its content type.
 * @template [T=any]
 * @param {Response} response
 * @returns {Promise<Reply<T>>}
 */
export async function readReply(response) {
  // Decoded from bytes: workerd warns when .text() reads a body whose type is not text (a form).
  const text = new TextDecoder().decode(await response.arrayBuffer());
  const json = jsonOf(text);
  return { status: response.status, headers: response.headers, text, body: text === "" ? null : json === undefined ? text : json };
}

/**
 * The JSON value of the text, or undefined when it is not JSON.
 * @param {string} text
 * @returns {any}
 */
export function jsonOf(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
