import { Type } from 'typebox';
import { responses } from '../../http/errors-schema.js';
import { failureAnswer, type WechatCallbacks } from './callbacks.js';
import { Errors } from '../../errors.js';
import type { ApiApp } from '../../http/route-info.js';

const GameParams = Type.Object({ game_id: Type.String({ minLength: 1, maxLength: 64 }) });

/**
 * WeChat Pay's payment and refund callbacks (the notify_url it is given). The signature covers
 * the exact body bytes, so the body is read raw. Answers are WeChat Pay's: 204 when handled,
 * 4xx/5xx `{code: "FAIL", message}` otherwise.
 */
export function registerWechatRoutes(app: ApiApp, callbacks: WechatCallbacks): void {
  app.post('/v1/callbacks/wechat/:game_id', {
    config: { auth: 'provider' },
    schema: {
      tags: ['callbacks'],
      summary: 'WeChat Pay API v3 payment and refund callbacks (the notify_url given to WeChat Pay)',
      params: GameParams,
      description: 'Failures are answered as WeChat Pay expects, `{"code": "FAIL", "message"}`, with the ErrorResponse `error` alongside; WeChat Pay sends the callback again later.',
      response: responses({ 204: Type.Null({ description: 'Handled' }) }, [Errors.invalidSignature, Errors.notFound, Errors.invalidState, Errors.paymentRejected]),
    },
    handler: async (req, reply) => {
      const gameId = req.params.game_id;
      try {
        const outcome = await callbacks.receive(gameId, req.headers, (req.rawBody ?? Buffer.alloc(0)).toString('utf8'));
        req.log.info({ game_id: gameId, ...outcome, traceId: req.id }, 'WeChat Pay callback');
        return reply.code(204).send();
      } catch (e) {
        const { status, body } = failureAnswer(e);
        if (status >= 500) req.log.error({ err: e, game_id: gameId, traceId: req.id }, 'WeChat Pay callback failed');
        else req.log.warn({ game_id: gameId, message: body.message, traceId: req.id }, 'WeChat Pay callback refused');
        // Serialized here: the response schema (ErrorResponse) would drop WeChat Pay's `code`.
        return reply.code(status as 400).type('application/json; charset=utf-8').send(JSON.stringify(body));
      }
    },
  });
}
