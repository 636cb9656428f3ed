import { Type } from 'typebox';
import { actorOf } from '../admin/actor.js';
import { responses } from '../http/errors-schema.js';
import { GameParams } from '../games/schemas.js';
import { ChannelList, ChannelParams, ChannelView } from './channel-schemas.js';
import type { ChannelService } from './channel-service.js';
import type { PaymentProvider } from './provider.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

const ADMIN_ERRORS = [Errors.invalidRequest, Errors.unauthorized, Errors.notFound, Errors.rateLimited];

/**
 * Operator API of games' payment channels (payments.md 2). PUT is one route per channel, so
 * each body is validated (and documented) by its own channel's schema.
 */
export function registerChannelRoutes(app: ApiApp, channels: ChannelService, providers: PaymentProvider[]): void {
  const admin = { auth: 'admin' as const };

  app.get('/admin/v1/games/:game_id/channels', {
    config: admin,
    schema: { tags: ['admin'], summary: "A game's payment channels (secrets show as \"***\")", params: GameParams, querystring: Type.Object({}, { additionalProperties: false }), response: responses({ 200: ChannelList }, ADMIN_ERRORS) },
    handler: async (req) => ({ data: await channels.list(req.params.game_id) }),
  });

  app.get('/admin/v1/games/:game_id/channels/:channel', {
    config: admin,
    schema: { tags: ['admin'], summary: "A game's payment channel (secrets show as \"***\")", params: ChannelParams, response: responses({ 200: ChannelView }, ADMIN_ERRORS) },
    handler: async (req) => {
      const p = req.params;
      return channels.get(p.game_id, p.channel);
    },
  });

  app.delete('/admin/v1/games/:game_id/channels/:channel', {
    config: admin,
    schema: { tags: ['admin'], summary: "Remove a game's payment channel", params: ChannelParams, response: responses({ 200: Type.Object({}) }, ADMIN_ERRORS) },
    handler: async (req) => {
      const p = req.params;
      await channels.delete(p.game_id, p.channel, actorOf(req));
      return {};
    },
  });

  for (const provider of providers) {
    app.put(`/admin/v1/games/:game_id/channels/${provider.name}`, {
      config: admin,
      schema: {
        tags: ['admin'],
        summary: `Set the game's \`${provider.name}\` channel (create or replace)${provider.secretFields.length ? `; ${provider.secretFields.join(', ')}: write-only` : ''}`,
        params: GameParams,
        body: provider.settingsBody,
        response: responses({ 200: ChannelView }, ADMIN_ERRORS),
      },
      handler: async (req) => {
        const gameId = req.params.game_id;
        return channels.put(gameId, provider.name, req.body, actorOf(req));
      },
    });
  }
}
