import type { FastifyRequest } from 'fastify';
import { principalOf } from '../operators/guard.js';

/**
 * Who made an operator change, for the audit log: the authenticated caller (an account's
 * email, `api-key:<name>`, or `ADMIN_TOKEN`), never a name the request claims (operators.md 1).
 */
export function actorOf(req: FastifyRequest): string {
  return principalOf(req)?.actor ?? 'ADMIN_TOKEN';
}
