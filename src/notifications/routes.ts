import { Type } from 'typebox';
import { actorOf } from '../admin/actor.js';
import { responses } from '../http/errors-schema.js';
import {
  DeliveryHealth,
  GameParams,
  ListNotificationsQuery,
  NotificationDetail,
  NotificationPage,
  NotificationParams,
  RedeliverCount,
  RedeliverSinceBody,
  RetryCount,
} from './schemas.js';
import type { NotificationService } from './service.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

const ADMIN_ERRORS = [Errors.unauthorized, Errors.notFound, Errors.invalidState, Errors.rateLimited];
const admin = { auth: 'admin' as const };
const EmptyBody = Type.Object({}, { additionalProperties: false });

/** Operator API for delivery notifications (PROTOCOL 11). */
export function registerNotificationRoutes(app: ApiApp, notifications: NotificationService): void {
  app.get('/admin/v1/notifications', {
    config: admin,
    schema: { tags: ['admin'], querystring: ListNotificationsQuery, response: responses({ 200: NotificationPage }, ADMIN_ERRORS) },
    handler: async (req) => notifications.list(req.query),
  });

  app.get('/admin/v1/notifications/:notification_id', {
    config: admin,
    schema: { tags: ['admin'], params: NotificationParams, response: responses({ 200: NotificationDetail }, ADMIN_ERRORS) },
    handler: async (req) => notifications.get(req.params.notification_id),
  });

  app.post('/admin/v1/notifications/:notification_id/redeliver', {
    config: admin,
    schema: {
      tags: ['admin'],
      params: NotificationParams,
      body: EmptyBody,
      response: responses({ 200: NotificationDetail }, ADMIN_ERRORS),
    },
    handler: async (req) => notifications.redeliver(req.params.notification_id, actorOf(req)),
  });

  app.post('/admin/v1/games/:game_id/notifications/redeliver', {
    config: admin,
    schema: { tags: ['admin'], params: GameParams, body: RedeliverSinceBody, response: responses({ 200: RedeliverCount }, ADMIN_ERRORS) },
    handler: async (req) =>
      notifications.redeliverSince(req.params.game_id, req.body.since, actorOf(req)),
  });

  app.post('/admin/v1/notifications/:notification_id/retry', {
    config: admin,
    schema: { tags: ['admin'], params: NotificationParams, body: EmptyBody, response: responses({ 200: NotificationDetail }, ADMIN_ERRORS) },
    handler: async (req) => notifications.retry(req.params.notification_id, actorOf(req)),
  });

  app.post('/admin/v1/games/:game_id/notifications/retry', {
    config: admin,
    schema: { tags: ['admin'], params: GameParams, body: EmptyBody, response: responses({ 200: RetryCount }, ADMIN_ERRORS) },
    handler: async (req) => notifications.retryFailing(req.params.game_id, actorOf(req)),
  });

  app.get('/admin/v1/games/:game_id/delivery-health', {
    config: admin,
    schema: { tags: ['admin'], params: GameParams, response: responses({ 200: DeliveryHealth }, ADMIN_ERRORS) },
    handler: async (req) => notifications.health(req.params.game_id),
  });
}
