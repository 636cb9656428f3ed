import { callingGame, SERVER_API_PREFIXES } from '../games/caller.js';
import { EmptyObject, responses } from '../http/errors-schema.js';
import { SessionListQuery, SessionPage, SessionReportBody } from './schemas.js';
import type { SessionService } from './service.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

export function registerSessionRoutes(app: ApiApp, sessions: SessionService): void {
  const errors = [Errors.invalidSignature, Errors.rateLimited];
  for (const prefix of SERVER_API_PREFIXES) {
    const hide = prefix !== '/v1/server';
    app.post(`${prefix}/enter-game`, {
      config: { auth: 'game' },
      schema: { tags: ['server'], summary: 'Report a player going online', hide, body: SessionReportBody, response: responses({ 200: EmptyObject }, errors) },
      handler: async (req) => {
        await sessions.enter(callingGame(req), req.body);
        return {};
      },
    });
    app.post(`${prefix}/leave-game`, {
      config: { auth: 'game' },
      schema: { tags: ['server'], summary: 'Report a player going offline', hide, body: SessionReportBody, response: responses({ 200: EmptyObject }, errors) },
      handler: async (req) => {
        await sessions.leave(callingGame(req), req.body);
        return {};
      },
    });
  }

  app.get('/admin/v1/sessions', {
    config: { auth: 'admin' },
    schema: {
      tags: ['admin'],
      summary: 'Sessions, newest first (with a player\'s online time per Beijing day when game_id and combo_id are given)',
      querystring: SessionListQuery,
      response: responses({ 200: SessionPage }, [Errors.unauthorized, Errors.rateLimited]),
    },
    handler: async (req) => sessions.list(req.query),
  });
}
