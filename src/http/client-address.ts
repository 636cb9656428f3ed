import type http from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import { addressGroup } from '../lib/address-group.js';

/**
 * The client a request comes from, before Fastify has made `req.ip`: the same address (the
 * TRUST_PROXY rules as Fastify applies them: a hop count trusts no X-Forwarded-For, as Fastify
 * does), an IPv6 one by its /64 (addressGroup), for bounds per client address.
 */
export function clientAddressOf(trustProxy: boolean | number | string[]): (req: http.IncomingMessage) => string {
  if (trustProxy === false || typeof trustProxy === 'number') return (req) => addressGroup(req.socket.remoteAddress ?? '');
  const trust = trustProxy === true ? () => true : proxyAddr.compile(trustProxy);
  return (req) => addressGroup(proxyAddr(req, trust));
}
