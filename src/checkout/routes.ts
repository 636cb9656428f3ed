import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { isApiError } from '../errors.js';
import { ErrorResponse, responses } from '../http/errors-schema.js';
import { prefersHtml } from '../lib/media-type.js';
import { pageHeaders, QR_HEADERS, renderCheckoutPage, renderErrorPage } from './page.js';
import { qrSvg } from './qr.js';
import { CheckoutParams, ClientOrder, ClientOrderBody, ClientPayBody, ClientPayResponse } from './schemas.js';
import type { CheckoutService } from './service.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

const CLIENT_ERRORS = [Errors.invalidToken, Errors.rateLimited];

/**
 * Takes one request from the token's own bucket (PROTOCOL 10: per token as well as per IP);
 * throws 429 when it is empty.
 */
export type TokenLimit = (reply: FastifyReply, orderToken: string) => void | Promise<void>;

/** Client purchase API and the hosted checkout page (PROTOCOL 10). No signature: the token is the credential. */
export function registerCheckoutRoutes(app: ApiApp, checkout: CheckoutService, limitToken: TokenLimit): void {
  // Game web pages call the client API from their own origin (the checkout client library).
  const client = { auth: 'client' as const, cors: true };
  for (const url of ['/v1/client/order', '/v1/client/pay']) {
    app.options(url, {
      config: client,
      schema: { tags: ['client'], summary: `CORS preflight of POST ${url}`, hide: true, response: { ...responses({}, []), 204: { description: 'Allowed from any origin', type: 'null' } } },
      handler: async (_req, reply) =>
        reply.code(204).headers({ 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'content-type', 'access-control-max-age': '600' }).send(null),
    });
  }

  app.post('/v1/client/order', {
    config: client,
    schema: {
      tags: ['client'],
      summary: 'The order behind an order_token',
      body: ClientOrderBody,
      response: responses({ 200: ClientOrder }, CLIENT_ERRORS),
    },
    handler: async (req, reply) => {
      const token = req.body.order_token;
      await limitToken(reply, token);
      return checkout.view(token);
    },
  });

  app.post('/v1/client/pay', {
    config: client,
    schema: {
      tags: ['client'],
      summary: 'Pay an order through a channel (`sandbox`: at once, no money moves)',
      body: ClientPayBody,
      response: responses({ 200: ClientPayResponse }, [...CLIENT_ERRORS, Errors.channelUnavailable, Errors.invalidState]),
    },
    handler: async (req, reply) => {
      const body = req.body;
      await limitToken(reply, body.order_token);
      return checkout.pay(body.order_token, body.channel, { mode: body.mode, client_ip: req.ip });
    },
  });

  app.get('/checkout/:order_token/wechat-qr.svg', {
    config: { auth: 'client' },
    schema: {
      tags: ['client'],
      summary: "QR code (SVG) of the order's WeChat Pay Native payment, started as by POST /v1/client/pay when none is open",
      params: CheckoutParams,
      response: {
        ...responses({}, [...CLIENT_ERRORS, Errors.channelUnavailable, Errors.invalidState]),
        200: { description: 'The code_url as a QR code', content: { 'image/svg+xml': { schema: Type.String() } } },
      },
    },
    handler: async (req, reply) => {
      const token = req.params.order_token;
      await limitToken(reply, token);
      const svg = await qrSvg(await checkout.wechatCodeUrl(token, req.ip));
      reply.headers(QR_HEADERS);
      return svg;
    },
  });

  // A browser page. Its 401 is an HTML page for a browser (a person reads it) and the
  // ErrorResponse of every other non-200 answer for anything else (rest-interface 1.6).
  app.get('/checkout/:order_token', {
    config: client,
    schema: {
      tags: ['client'],
      summary: 'Hosted checkout page (text/html)',
      params: CheckoutParams,
      response: {
        ...responses({}, [Errors.rateLimited]),
        200: { description: 'The checkout page', content: { 'text/html': { schema: Type.String() } } },
        401: {
          description: 'Unknown, forged or tampered order token: an HTML error page when the request accepts `text/html` (a browser), else the ErrorResponse `invalid_token`',
          content: { 'text/html': { schema: Type.String() }, 'application/json': { schema: ErrorResponse } },
        },
      },
    },
    handler: async (req, reply) => {
      const token = req.params.order_token;
      await limitToken(reply, token);
      const nonce = randomBytes(16).toString('base64');
      reply.headers(pageHeaders(nonce));
      try {
        return renderCheckoutPage(await checkout.page(token), token, nonce);
      } catch (e) {
        if (!isApiError(e) || e.status !== 401 || !prefersHtml(req.headers.accept)) throw e;
        reply.code(401);
        return renderErrorPage('Order not found', 'This checkout link is not valid. Ask the game for a new one.', nonce);
      }
    },
  });
}

