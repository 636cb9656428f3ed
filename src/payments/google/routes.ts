import { Type, type Static } from 'typebox';
import type { TokenLimit } from '../../checkout/routes.js';
import { responses } from '../../http/errors-schema.js';
import type { GoogleClient } from './client.js';
import type { GoogleNotifications } from './notifications.js';
import { Errors } from '../../errors.js';
import type { ApiApp } from '../../http/route-info.js';

export const GooglePurchaseBody = Type.Object({
  purchase_token: Type.String({ minLength: 1, maxLength: 4096, description: "Play Billing's Purchase.getPurchaseToken()" }),
  product_id: Type.String({ minLength: 1, maxLength: 255, description: 'The Google Play product id bought (the action\'s product_id)' }),
  order_token: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'The order the purchase was made for; may be left out when submitting again at a later start' })),
});
export type GooglePurchaseBody = Static<typeof GooglePurchaseBody>;

export const GooglePurchaseResponse = Type.Object({
  order_id: Type.String(),
  status: Type.String({ description: 'The order\'s status: `paid`, or `delivered` once the game has acknowledged ship_order' }),
});

const GameParams = Type.Object({ game_id: Type.String({ minLength: 1, maxLength: 64 }) });

/** The `google` channel's client submission and its Real-time developer notifications (payments.md 3-4). */
export function registerGoogleRoutes(app: ApiApp, d: { client: GoogleClient; notifications: GoogleNotifications; limitToken: TokenLimit }): void {
  app.post('/v1/client/google/purchases', {
    config: { auth: 'client' },
    schema: {
      tags: ['client'],
      summary: 'Submit a Google Play purchase: the order it was made for is paid, the purchase consumed',
      body: GooglePurchaseBody,
      response: responses({ 200: GooglePurchaseResponse }, [Errors.invalidToken, Errors.channelUnavailable, Errors.invalidState, Errors.paymentRejected, Errors.rateLimited]),
    },
    handler: async (req, reply) => {
      const body = req.body;
      if (body.order_token !== undefined) await d.limitToken(reply, body.order_token);
      return d.client.submit(body);
    },
  });

  app.post('/v1/callbacks/google/:game_id', {
    config: { auth: 'provider' },
    schema: {
      tags: ['callbacks'],
      summary: 'Google Play Real-time developer notifications (Pub/Sub push, OIDC token verified)',
      params: GameParams,
      response: responses({ 204: { description: 'Handled (Pub/Sub acknowledges it)', type: 'null' } }, [Errors.invalidToken, Errors.channelUnavailable]),
    },
    handler: async (req, reply) => {
      await d.notifications.handle(req.params.game_id, req.headers.authorization, req.body);
      return reply.code(204).send();
    },
  });
}
