/** The console session's answer (POST and GET /console/session): who is signed in and what the key may do. */
export interface Session {
  tenant_id: string;
  application: { id: string; name: string; type: string };
  permissions: string[];
  expires_at: string;
}

export function may(session: Session, permission: string): boolean {
  return session.permissions.includes(permission);
}
