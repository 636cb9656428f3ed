import { callingGame, SERVER_API_PREFIXES } from '../games/caller.js';
import { EmptyObject, responses } from '../http/errors-schema.js';
import { callingPartner, requireEnabledPartner } from '../partners/caller.js';
import { BindBody, BindingPage, BindingResponse, BindResponse, ListBindingsQuery, QueryBindingQuery, UnbindBody } from './schemas.js';
import type { BindingService } from './service.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

export function registerBindingRoutes(app: ApiApp, bindings: BindingService): void {
  const serverErrors = [Errors.invalidSignature, Errors.rateLimited];
  for (const prefix of SERVER_API_PREFIXES) {
    const hide = prefix !== '/v1/server';
    app.post(`${prefix}/bind-partner-user`, {
      config: { auth: 'game' },
      schema: { tags: ['server'], summary: 'Bind a partner user to a role', hide, body: BindBody, response: responses({ 200: BindResponse }, serverErrors) },
      handler: async (req) => bindings.bind(callingGame(req), req.body),
    });
    app.post(`${prefix}/unbind-partner-user`, {
      config: { auth: 'game' },
      schema: { tags: ['server'], summary: 'Remove a partner user binding', hide, body: UnbindBody, response: responses({ 200: EmptyObject }, serverErrors) },
      handler: async (req) => {
        await bindings.unbind(callingGame(req), req.body);
        return {};
      },
    });
  }

  app.get('/v1/query-binding', {
    config: { auth: 'partner', precheck: requireEnabledPartner },
    schema: {
      tags: ['partner'],
      summary: 'The role a partner user has bound in a game',
      querystring: QueryBindingQuery,
      response: responses({ 200: BindingResponse }, [Errors.invalidSignature, Errors.partnerDisabled, Errors.bindingNotFound, Errors.roleNotFound, Errors.rateLimited]),
    },
    handler: async (req) => bindings.query(callingPartner(req), req.query),
  });

  app.get('/admin/v1/bindings', {
    config: { auth: 'admin' },
    schema: { tags: ['admin'], querystring: ListBindingsQuery, response: responses({ 200: BindingPage }, [Errors.unauthorized, Errors.rateLimited]) },
    handler: async (req) => bindings.list(req.query),
  });
}
