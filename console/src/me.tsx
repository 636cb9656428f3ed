import { createContext, useContext } from 'react';
import { hasRole, ROLES, type Role } from '../../src/operators/roles';
import type { Me } from './api';

export { ROLES, type Role };

/** Who is signed in (GET /admin/v1/me): the pages show only what its role may do. */
export const MeContext = createContext<Me | null>(null);

export function useMe(): Me | null {
  return useContext(MeContext);
}

/**
 * Whether the signed-in caller may use what needs `role` (src/operators/access.ts). `global`:
 * what belongs to no game (partners, accounts, API keys, the audit log), refused to an account
 * limited to some games.
 */
export function may(me: Me | null, role: Role, global = false): boolean {
  if (!me) return false;
  return hasRole(me.role, role) && (!global || me.games === null);
}

export function useCan(): (role: Role, global?: boolean) => boolean {
  const me = useMe();
  return (role, global) => may(me, role, global);
}

/** The roles `me` may give an account or API key: never above its own; owner only by an owner. */
export function grantableRoles(me: Me | null): Role[] {
  return ROLES.filter((r) => me !== null && hasRole(me.role, r) && (r !== 'owner' || me.role === 'owner'));
}
