import { actorOf } from '../admin/actor.js';
import { EmptyObject, responses } from '../http/errors-schema.js';
import type { GameService } from './service.js';
import {
  CreateGameBody,
  Game,
  GamePage,
  GameParams,
  GameWithSecret,
  ListGamesQuery,
  KeyParams,
  NewKey,
  PatchGameBody,
  Product,
  ProductParams,
  PutProductBody,
} from './schemas.js';
import { Type } from 'typebox';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

const ADMIN_ERRORS = [Errors.unauthorized, Errors.notFound, Errors.conflict, Errors.rateLimited];

/** Operator API for games, keys and products (PROTOCOL 11). */
export function registerGameRoutes(app: ApiApp, games: GameService): void {
  const admin = { auth: 'admin' as const };

  app.post('/admin/v1/games', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Create a game (answers its first secret key, shown only here)', body: CreateGameBody, response: responses({ 201: GameWithSecret }, ADMIN_ERRORS) },
    handler: async (req, reply) => reply.code(201).send(await games.create(req.body, actorOf(req))),
  });

  app.get('/admin/v1/games', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Games in id order, cursor paging', querystring: ListGamesQuery, response: responses({ 200: GamePage }, ADMIN_ERRORS) },
    handler: async (req) => games.list(req.query),
  });

  app.get('/admin/v1/games/:game_id', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Get a game', params: GameParams, response: responses({ 200: Game }, ADMIN_ERRORS) },
    handler: async (req) => games.get(req.params.game_id),
  });

  app.patch('/admin/v1/games/:game_id', {
    config: admin,
    schema: { tags: ['admin'], summary: "Change a game's settings", params: GameParams, body: PatchGameBody, response: responses({ 200: Game }, ADMIN_ERRORS) },
    handler: async (req) => games.patch(req.params.game_id, req.body, actorOf(req)),
  });

  app.post('/admin/v1/games/:game_id/keys', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Add a signing key (key rotation); no body, or {}', params: GameParams, body: EmptyObject, response: responses({ 201: NewKey }, ADMIN_ERRORS) },
    handler: async (req, reply) => reply.code(201).send(await games.addKey(req.params.game_id, actorOf(req))),
  });

  app.delete('/admin/v1/games/:game_id/keys/:key_id', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Retire a signing key', params: KeyParams, response: responses({ 200: Type.Object({}) }, ADMIN_ERRORS) },
    handler: async (req) => {
      const p = req.params;
      await games.deleteKey(p.game_id, p.key_id, actorOf(req));
      return {};
    },
  });

  app.put('/admin/v1/games/:game_id/products/:product_id', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Create or replace a product', params: ProductParams, body: PutProductBody, response: responses({ 200: Product }, ADMIN_ERRORS) },
    handler: async (req) => {
      const p = req.params;
      return games.putProduct(p.game_id, p.product_id, req.body, actorOf(req));
    },
  });

  app.get('/admin/v1/games/:game_id/products/:product_id', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Get a product', params: ProductParams, response: responses({ 200: Product }, ADMIN_ERRORS) },
    handler: async (req) => {
      const p = req.params;
      return games.getProduct(p.game_id, p.product_id);
    },
  });

  app.get('/admin/v1/games/:game_id/products', {
    config: admin,
    // No filters and no paging (a game has few products), but an unknown parameter is refused
    // as on every listing: `?active=true` must not look like a filter that was applied.
    schema: { tags: ['admin'], summary: "List a game's products", params: GameParams, querystring: Type.Object({}, { additionalProperties: false }), response: responses({ 200: Type.Object({ data: Type.Array(Product) }) }, ADMIN_ERRORS) },
    handler: async (req) => ({ data: await games.listProducts(req.params.game_id) }),
  });
}
