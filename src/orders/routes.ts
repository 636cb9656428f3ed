import type { FastifyInstance } from 'fastify';
import { Errors } from '../errors.js';
import { callingGame, SERVER_API_PREFIXES } from '../games/caller.js';
import { responses } from '../http/errors-schema.js';
import { CreateOrderBody, CreateOrderResponse } from './schemas.js';
import type { OrderService } from './service.js';

export function registerOrderRoutes(app: FastifyInstance, orders: OrderService): void {
  for (const prefix of SERVER_API_PREFIXES) {
    app.post(`${prefix}/create-order`, {
      config: {
        auth: 'game',
        // Caller state (403) is checked after the signature and before parameters (PROTOCOL 2).
        precheck: (req) => {
          if (callingGame(req).game.iap_enabled !== 1) throw Errors.gameIapDisabled('in-app purchase is disabled for this game');
        },
      },
      schema: {
        tags: ['server'],
        summary: 'Create an in-app purchase order',
        hide: prefix !== '/v1/server',
        body: CreateOrderBody,
        response: responses({ 200: CreateOrderResponse }, [401, 403, 422, 429]),
      },
      handler: async (req) => orders.create(callingGame(req), req.body as CreateOrderBody),
    });
  }
}
