/** Set by the vault when it hands a script its bridge: the principal `bt` acts as. */
export interface BridgeProps {
  tenantId: string;
  applicationId: string;
}
