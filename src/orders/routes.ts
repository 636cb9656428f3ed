import { Errors } from '../errors.js';
import { callingGame, SERVER_API_PREFIXES } from '../games/caller.js';
import { responses } from '../http/errors-schema.js';
import { CreateOrderBody, CreateOrderResponse } from './schemas.js';
import type { OrderService } from './service.js';
import type { ApiApp } from '../http/route-info.js';

const iapDisabled = () => Errors.gameIapDisabled('in-app purchase is disabled for this game');

export function registerOrderRoutes(app: ApiApp, orders: OrderService): void {
  for (const prefix of SERVER_API_PREFIXES) {
    app.post(`${prefix}/create-order`, {
      config: {
        auth: 'game',
        // Caller state (403) is checked after the signature and before parameters (PROTOCOL 2),
        // except for a repeat of an existing order, which create answers whatever changed since
        // (PROTOCOL 3: a reference identifies one order forever).
        precheck: (req) => {
          const game = callingGame(req).game;
          if (game.iap_enabled === 1) return;
          return orders.isRepeat(game.game_id, req.rawBody).then((repeat) => {
            if (!repeat) throw iapDisabled();
          });
        },
      },
      schema: {
        tags: ['server'],
        summary: 'Create an in-app purchase order',
        hide: prefix !== '/v1/server',
        body: CreateOrderBody,
        response: responses({ 200: CreateOrderResponse }, [Errors.invalidSignature, Errors.gameIapDisabled, Errors.accountBanned, Errors.rechargeLimitExceeded, Errors.duplicateReferenceId, Errors.rateLimited]),
      },
      // A request let past the caller-state check as a repeat (above) but with invalid
      // parameters is no repeat: it gets the caller-state refusal, which comes first.
      attachValidation: true,
      handler: async (req) => {
        const snap = callingGame(req);
        if (req.validationError) throw snap.game.iap_enabled === 1 ? req.validationError : iapDisabled();
        return orders.create(snap, req.body);
      },
    });
  }
}
