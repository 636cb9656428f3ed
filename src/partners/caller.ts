import type { FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import type { PartnerSnapshot } from './service.js';

/** The signed partner of a request on an `auth: 'partner'` route. */
export function callingPartner(req: FastifyRequest): PartnerSnapshot {
  const snap = req.caller as PartnerSnapshot | undefined;
  if (!snap?.partner) throw Errors.internal('route has no authenticated partner');
  return snap;
}

/** Caller-state check (403) for partner routes, run after the signature (PROTOCOL 2). */
export function requireEnabledPartner(req: FastifyRequest): void {
  if (callingPartner(req).partner.enabled !== 1) throw Errors.partnerDisabled('the partner is disabled');
}
