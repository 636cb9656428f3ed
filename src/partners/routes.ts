import { Type, type Static } from 'typebox';
import { actorOf } from '../admin/actor.js';
import { EmptyObject, responses } from '../http/errors-schema.js';
import {
  CreatePartnerBody,
  ListPartnersQuery,
  Partner,
  PartnerKeyParams,
  PartnerPage,
  PartnerParams,
  PartnerWithSecret,
  PatchPartnerBody,
} from './schemas.js';
import type { PartnerService } from './service.js';
import { NewKey } from '../games/schemas.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

const ADMIN_ERRORS = [Errors.unauthorized, Errors.notFound, Errors.conflict, Errors.rateLimited];

/** Operator API for partners and their keys (PROTOCOL 11). */
export function registerPartnerRoutes(app: ApiApp, partners: PartnerService): void {
  const admin = { auth: 'admin' as const };
  const id = (req: { params: Static<typeof PartnerParams> }) => req.params.partner_id;

  app.post('/admin/v1/partners', {
    config: admin,
    schema: { tags: ['admin'], body: CreatePartnerBody, response: responses({ 201: PartnerWithSecret }, ADMIN_ERRORS) },
    handler: async (req, reply) => reply.code(201).send(await partners.create(req.body, actorOf(req))),
  });

  app.get('/admin/v1/partners', {
    config: admin,
    schema: { tags: ['admin'], querystring: ListPartnersQuery, response: responses({ 200: PartnerPage }, ADMIN_ERRORS) },
    handler: async (req) => partners.list(req.query),
  });

  app.get('/admin/v1/partners/:partner_id', {
    config: admin,
    schema: { tags: ['admin'], params: PartnerParams, response: responses({ 200: Partner }, ADMIN_ERRORS) },
    handler: async (req) => partners.get(id(req)),
  });

  app.patch('/admin/v1/partners/:partner_id', {
    config: admin,
    schema: { tags: ['admin'], params: PartnerParams, body: PatchPartnerBody, response: responses({ 200: Partner }, ADMIN_ERRORS) },
    handler: async (req) => partners.patch(id(req), req.body, actorOf(req)),
  });

  app.post('/admin/v1/partners/:partner_id/keys', {
    config: admin,
    schema: { tags: ['admin'], params: PartnerParams, body: EmptyObject, response: responses({ 201: NewKey }, ADMIN_ERRORS) },
    handler: async (req, reply) => reply.code(201).send(await partners.addKey(id(req), actorOf(req))),
  });

  app.delete('/admin/v1/partners/:partner_id/keys/:key_id', {
    config: admin,
    schema: { tags: ['admin'], params: PartnerKeyParams, response: responses({ 200: Type.Object({}) }, ADMIN_ERRORS) },
    handler: async (req) => {
      const p = req.params;
      await partners.deleteKey(p.partner_id, p.key_id, actorOf(req));
      return {};
    },
  });
}
