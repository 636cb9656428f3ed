import type { TokenLimit } from '../../checkout/routes.js';
import { Type, type Static } from 'typebox';
import { ClientOrderStatus } from '../../checkout/schemas.js';
import { responses } from '../../http/errors-schema.js';
import type { AppleNotifications } from './notifications.js';
import type { AppleTransactions } from './transactions.js';
import { Errors } from '../../errors.js';
import type { ApiApp } from '../../http/route-info.js';

const JWS = (description: string) => Type.String({ minLength: 1, maxLength: 32_768, description });

export const AppleTransactionBody = Type.Object({
  signed_transaction: JWS("StoreKit 2's Transaction.jwsRepresentation"),
  order_token: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'The order_token of the order being paid, when the client still has it' })),
});
type AppleTransactionBody = Static<typeof AppleTransactionBody>;

const AppleNotificationBody = Type.Object({ signedPayload: JWS('App Store Server Notifications V2: the signed payload') });
const GameParams = Type.Object({ game_id: Type.String({ minLength: 1, maxLength: 64 }) });

export function registerAppleRoutes(app: ApiApp, d: { transactions: AppleTransactions; notifications: AppleNotifications; limitToken: TokenLimit }): void {
  app.post('/v1/client/apple/transactions', {
    config: { auth: 'client' },
    schema: {
      tags: ['client'],
      summary: 'Pay an order with a StoreKit 2 transaction (safe to submit again)',
      body: AppleTransactionBody,
      response: responses({ 200: Type.Object({ order_id: Type.String(), status: ClientOrderStatus }) }, [Errors.invalidToken, Errors.channelUnavailable, Errors.invalidState, Errors.paymentRejected, Errors.rateLimited]),
    },
    handler: async (req, reply) => {
      const body = req.body;
      if (body.order_token !== undefined) await d.limitToken(reply, body.order_token);
      return d.transactions.submit(body.signed_transaction, body.order_token);
    },
  });

  app.post('/v1/callbacks/apple/:game_id', {
    config: { auth: 'provider' },
    schema: {
      tags: ['callbacks'],
      summary: 'App Store Server Notifications V2 (paste its URL into App Store Connect)',
      params: GameParams,
      body: AppleNotificationBody,
      response: responses({ 200: Type.Object({}) }, [Errors.notFound, Errors.paymentRejected]),
    },
    handler: async (req) => {
      const gameId = req.params.game_id;
      const outcome = await d.notifications.receive(gameId, req.body.signedPayload);
      req.log.info({ game_id: gameId, ...outcome, traceId: req.id }, outcome.notification_type === 'TEST' ? 'App Store test notification' : 'App Store notification');
      return {};
    },
  });
}
