import type { FastifyRequest } from 'fastify';
import { principalOf } from '../operators/guard.js';
import type { Actor } from './audit.js';

/**
 * Who made an operator change, for the audit log: the authenticated caller (an account's
 * email, `api-key:<name>`, or `ADMIN_TOKEN`), never a name the request claims, and the client
 * address as the service resolves it (`req.ip`: TRUST_PROXY applied) (operators.md 1).
 */
export function actorOf(req: FastifyRequest): Actor {
  return { actor: principalOf(req)?.actor ?? 'ADMIN_TOKEN', address: req.ip };
}
