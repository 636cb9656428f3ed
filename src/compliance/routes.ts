import { actorOf } from '../admin/actor.js';
import { responses } from '../http/errors-schema.js';
import { GameParams } from '../games/schemas.js';
import type { PlayerService } from './players.js';
import { NppaEventPage, NppaEventsQuery, Player, PlayerParams, PutPlayerBody } from './schemas.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

const ADMIN_ERRORS = [Errors.unauthorized, Errors.notFound, Errors.rateLimited];

/** Operator API for players (PROTOCOL 12) and the national-system upload queue. */
export function registerComplianceRoutes(app: ApiApp, players: PlayerService): void {
  const admin = { auth: 'admin' as const };

  app.put('/admin/v1/games/:game_id/players/:combo_id', {
    config: admin,
    schema: {
      tags: ['admin'],
      summary: 'Record what the operator knows of a player (pi, birth date, ban)',
      params: PlayerParams,
      body: PutPlayerBody,
      response: responses({ 200: Player }, ADMIN_ERRORS),
    },
    handler: async (req) => {
      const p = req.params;
      return players.put(p.game_id, p.combo_id, req.body, actorOf(req));
    },
  });

  app.get('/admin/v1/games/:game_id/players/:combo_id', {
    config: admin,
    schema: {
      tags: ['admin'],
      summary: 'A player with month-to-date spending and online time (Beijing time)',
      params: PlayerParams,
      response: responses({ 200: Player }, ADMIN_ERRORS),
    },
    handler: async (req) => {
      const p = req.params;
      return players.get(p.game_id, p.combo_id);
    },
  });

  app.get('/admin/v1/games/:game_id/nppa/events', {
    config: admin,
    schema: {
      tags: ['admin'],
      summary: 'National-system behaviour events of a game, newest first (status=failed: refused items)',
      params: GameParams,
      querystring: NppaEventsQuery,
      response: responses({ 200: NppaEventPage }, ADMIN_ERRORS),
    },
    handler: async (req) => players.events(req.params.game_id, req.query),
  });
}
