import { Type } from 'typebox';
import { Errors, isApiError } from '../../errors.js';
import { ErrorResponse, responses } from '../../http/errors-schema.js';
import type { AlipayNotifications } from './notify.js';
import type { ApiApp } from '../../http/route-info.js';

const GameParams = Type.Object({ game_id: Type.String({ minLength: 1, maxLength: 64 }) });
const Fail = Type.Literal('fail', { description: 'Not handled: Alipay sends the notify again later' });

/**
 * What the route answers `fail` with. The pipeline's own refusals (413, 415, ...) and a
 * failure of the service (500, 503: the database unreachable) are ErrorResponse JSON: Alipay
 * reads anything but `success` as not handled.
 */
const FAIL_STATUSES: Record<number, string> = {
  400: 'not a signed notify form',
  404: 'the game has no alipay channel',
  422: "the signature does not verify with the game's alipay_public_key, or app_id is another application's",
};

/** A response answered `fail` (text/plain) by the route, or an ErrorResponse by the pipeline. */
function failOr(description: string): unknown {
  return { description, content: { 'text/plain': { schema: Fail }, 'application/json': { schema: ErrorResponse } } };
}

/**
 * POST /v1/callbacks/alipay/:game_id: Alipay's async notify (payments.md 4), a form post.
 * Answered `success` (text/plain) once handled; otherwise `fail`, and the reason is logged.
 */
export function registerAlipayRoutes(app: ApiApp, d: { notifications: AlipayNotifications }): void {
  const response: Record<number, unknown> = {
    ...responses({ 200: { description: 'Handled', content: { 'text/plain': { schema: Type.Literal('success') } } } }, [Errors.notFound, Errors.paymentRejected]),
  };
  for (const [s, why] of Object.entries(FAIL_STATUSES)) response[Number(s)] = failOr(`Not handled: \`fail\` from the route (${why}), or an ErrorResponse from the pipeline`);

  app.post('/v1/callbacks/alipay/:game_id', {
    config: { auth: 'provider' },
    schema: {
      tags: ['callbacks'],
      summary: "Alipay async notify (application/x-www-form-urlencoded; the channel's callback_url is the notify_url of its payments)",
      params: GameParams,
      response,
    },
    handler: async (req, reply) => {
      const gameId = req.params.game_id;
      reply.type('text/plain; charset=utf-8');
      try {
        if (typeof req.body !== 'string') throw Errors.invalidRequest('the notify is not a form post (application/x-www-form-urlencoded)');
        const outcome = await d.notifications.receive(gameId, req.body);
        req.log.info({ game_id: gameId, ...outcome, traceId: req.id }, 'Alipay notify');
        return 'success';
      } catch (e) {
        if (!isApiError(e) || !Object.hasOwn(FAIL_STATUSES, e.status)) throw e;
        req.log.warn({ game_id: gameId, status: e.status, reason: e.message, traceId: req.id }, 'Alipay notify not handled');
        reply.code(e.status);
        return 'fail';
      }
    },
  });
}
