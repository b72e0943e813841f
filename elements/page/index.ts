import { Vault } from "./vault";

/*
 * elements.js, the script a merchant's page loads from the vault: `TokenVaultElements.init(publicKey)`.
 * The vault is the origin this script was loaded from.
 */

const script = document.currentScript as HTMLScriptElement | null;
const vaultOrigin = new URL(script?.src ?? document.querySelector<HTMLScriptElement>('script[src*="/elements/v1/elements.js"]')!.src)
  .origin;

declare global {
  interface Window {
    TokenVaultElements: { init(publicKey: string): Promise<Vault> };
  }
}

window.TokenVaultElements = {
  async init(publicKey) {
    if (typeof publicKey !== "string" || publicKey === "") throw new TypeError("init takes the public API key");
    return new Vault(vaultOrigin, publicKey);
  },
};
