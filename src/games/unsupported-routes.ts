import { Type } from 'typebox';
import { Errors } from '../errors.js';
import { SERVER_API_PREFIXES } from './caller.js';
import { responses } from '../http/errors-schema.js';
import type { ApiApp } from '../http/route-info.js';

/**
 * Server API methods of the Combo Node.js SDK that this service does not provide (they are Combo
 * platform services outside rest-interface: SMS codes, a WeChat mini-game token, voice
 * moderation). A game calling one through an SDK gets 501 `not_implemented` naming the method,
 * after the signature check like every server API call, instead of a 404 that reads like a
 * wrong endpoint setting.
 */
export const UNSUPPORTED_SDK_METHODS = ['send-otp', 'verify-otp', 'minigame-weixin-access-token', 'voice-moderation-request'] as const;

export function registerUnsupportedSdkRoutes(app: ApiApp): void {
  for (const prefix of SERVER_API_PREFIXES) {
    for (const method of UNSUPPORTED_SDK_METHODS) {
      app.post(`${prefix}/${method}`, {
        config: { auth: 'game' },
        schema: {
          tags: ['server'],
          summary: `Not provided by this service (a Combo SDK method): 501`,
          hide: prefix !== '/v1/server',
          body: Type.Object({}, { additionalProperties: true }),
          response: responses({}, [Errors.invalidSignature, Errors.rateLimited, Errors.notImplemented]),
        },
        handler: async () => {
          throw Errors.notImplemented(`${method} is a Combo platform service this service does not provide`);
        },
      });
    }
  }
}
