import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';

/** GET /admin/v1/audit query. */
export const AuditQuery = Type.Object({
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'e.g. game.update, order.refund' })),
  target: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'exact target, e.g. a game id or game/key' })),
  actor: Type.Optional(Type.String({ minLength: 1, maxLength: 264 })),
  game_id: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'the entries about this game; an account limited to one game has it filled in, one limited to several must give it',
  })),
  limit: PageLimit,
  cursor: PageCursor,
}, { additionalProperties: false });
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditEntry = Type.Object({
  audit_id: Type.String(),
  at: Type.Integer({ description: 'Unix ms' }),
  actor: Type.String({ description: 'the authenticated caller: an account\'s email, "api-key:<name>", "ADMIN_TOKEN"; "cli" for rotate-secrets' }),
  address: Type.Union([Type.String(), Type.Null()], { description: 'the client address of the request (TRUST_PROXY applied); null for a change made with the CLI' }),
  action: Type.String(),
  target: Type.String(),
  game_id: Type.Union([Type.String(), Type.Null()], { description: 'the game the change is about; null: none (partners, operators, secrets)' }),
  detail: Type.Unknown({ description: 'what was changed (secrets never appear)' }),
});

export const AuditPage = Type.Object({ data: Type.Array(AuditEntry), next_cursor: Type.Union([Type.String(), Type.Null()]) });
