import type { FastifyRequest } from 'fastify';
import { decodeOperatorName } from '../lib/operator-name.js';

/**
 * Who made an operator change, for the audit log: the `X-Operator` header when the client
 * (CLI, console) names a person (plain ASCII, or any script as `UTF-8''<percent-encoded>`, see
 * lib/operator-name.ts), else "admin". Everyone holding the admin token is trusted equally; the
 * name is informational.
 */
export function actorOf(req: FastifyRequest): string {
  const h = req.headers['x-operator'];
  const v = Array.isArray(h) ? h[0] : h;
  const name = v ? decodeOperatorName(v) : null;
  return name ? `admin:${name}` : 'admin';
}
