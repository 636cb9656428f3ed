import type { FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import type { GameSnapshot } from './service.js';

/** The signed game of a request on a `auth: 'game'` route. */
export function callingGame(req: FastifyRequest): GameSnapshot {
  const snap = req.caller as GameSnapshot | undefined;
  if (!snap?.game) throw Errors.internal('route has no authenticated game');
  return snap;
}

/**
 * The server API lives under /v1/server (rest-interface), where the Go SDK and current Node.js
 * SDK releases call it; older Node.js SDK releases call /v3/server. Both prefixes serve the same
 * handlers so every release works unchanged.
 */
export const SERVER_API_PREFIXES = ['/v1/server', '/v3/server'] as const;
