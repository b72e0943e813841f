import { HEADER_PREFIX_PATTERN } from "../protocol";
import { Vault } from "./vault";

/*
 * elements.js, the script a merchant's page loads from the vault: `TokenVaultElements.init(publicKey)`.
 * The vault is the origin this script was loaded from.
 */

export interface InitOptions {
  /** The deployment's HEADER_PREFIX, which names the header the frames send the key in; "SVC" by default. */
  headerPrefix?: string;
}

const script = document.currentScript as HTMLScriptElement | null;
const vaultOrigin = new URL(script?.src ?? document.querySelector<HTMLScriptElement>('script[src*="/elements/v1/elements.js"]')!.src)
  .origin;

declare global {
  interface Window {
    TokenVaultElements: { init(publicKey: string, options?: InitOptions): Promise<Vault> };
  }
}

window.TokenVaultElements = {
  async init(publicKey, { headerPrefix = "SVC" } = {}) {
    if (typeof publicKey !== "string" || publicKey === "") throw new TypeError("init takes the public API key");
    if (!HEADER_PREFIX_PATTERN.test(headerPrefix))
      throw new TypeError("headerPrefix must be 1-20 letters or digits, starting with a letter");
    return new Vault(vaultOrigin, publicKey, headerPrefix);
  },
};
