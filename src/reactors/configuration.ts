import type { TenantKeys } from "../crypto/tenant-keys";
import type { Configuration } from "./contract";

/** Additional data of the ciphertext: a configuration copied onto another reactor fails to decrypt. */
export const configurationContext = (reactorId: string) => `reactors/${reactorId}/configuration`;

/** Reactor configuration often holds a partner's secrets, so it is stored encrypted under the tenant key. */
export function encryptConfiguration(keys: TenantKeys, reactorId: string, configuration: Configuration): Promise<string> {
  return keys.encrypt(JSON.stringify(configuration), configurationContext(reactorId));
}

export async function decryptConfiguration(keys: TenantKeys, row: { id: string; configuration: string | null }): Promise<Configuration> {
  if (row.configuration === null) return {};
  return JSON.parse(await keys.decrypt(row.configuration, configurationContext(row.id))) as Configuration;
}
