import { sql, type Kysely } from 'kysely';

/** Actions whose target is a game id or starts with `<game_id>/`. */
const GAME_TARGETS = [
  'game.create', 'game.update', 'game.key.create', 'game.key.delete', 'product.put', 'game.channel.put', 'game.channel.delete',
  'player.put', 'reconciliation.run', 'notification.redeliver_all', 'notification.retry_all',
];

/**
 * operators.md 1:
 * - audit_log.address: the client address of the request that made the change (TRUST_PROXY
 *   applied; null for the CLI);
 * - audit_log.game_id: the game an entry is about (null: none, e.g. partners, operators), so an
 *   account limited to some games reads its games' entries; filled in for the entries there are,
 *   from their targets;
 * - operators.totp_last_step: the TOTP time step of the account's last accepted code, so a code
 *   is taken once.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('audit_log').addColumn('address', 'text').execute();
  await db.schema.alterTable('audit_log').addColumn('game_id', 'text').execute();
  await db.schema.alterTable('operators').addColumn('totp_last_step', 'bigint').execute();

  await sql`UPDATE audit_log SET game_id = (SELECT g.game_id FROM games g
      WHERE g.game_id = audit_log.target OR substr(audit_log.target, 1, length(g.game_id) + 1) = g.game_id || '/' LIMIT 1)
    WHERE action IN (${sql.join(GAME_TARGETS)})`.execute(db);
  await sql`UPDATE audit_log SET game_id = (SELECT o.game_id FROM orders o WHERE o.order_id = audit_log.target)
    WHERE action IN ('order.refund', 'order.cancel')`.execute(db);
  await sql`UPDATE audit_log SET game_id = (SELECT n.game_id FROM notifications n WHERE n.notification_id = audit_log.target)
    WHERE action IN ('notification.redeliver', 'notification.retry')`.execute(db);
  await db.schema.createIndex('audit_log_game').on('audit_log').columns(['game_id', 'audit_id']).execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
