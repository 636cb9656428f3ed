import type { FastifyRequest } from 'fastify';

/**
 * Who made an operator change, for the audit log: the `X-Operator` header when the client
 * (CLI, console) names a person, else "admin". Everyone holding the admin token is trusted
 * equally; the name is informational.
 */
export function actorOf(req: FastifyRequest): string {
  const h = req.headers['x-operator'];
  const v = Array.isArray(h) ? h[0] : h;
  return v && /^[\x20-\x7e]{1,64}$/.test(v) ? `admin:${v}` : 'admin';
}
