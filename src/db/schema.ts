import type { Generated } from 'kysely';
import type { GameKeysTable, GamesTable, ProductsTable } from './schema/games.js';
import type { OrderAccountTokensTable, OrderEventsTable, OrdersTable } from './schema/orders.js';
import type {
  GameChannelsTable,
  GooglePurchasesTable,
  PaymentsTable,
  ProviderPaymentsTable,
  ProviderRefundsTable,
  ReconciliationScheduleTable,
  ReconciliationsTable,
} from './schema/payments.js';
import type { NotificationAttemptsTable, NotificationsTable } from './schema/notifications.js';
import type { NppaEventsTable, NppaLeasesTable, PlayersTable, SessionsTable } from './schema/compliance.js';
import type { BindingsTable, PartnerGamesTable, PartnerKeysTable, PartnersTable } from './schema/partners.js';
import type {
  AuditLogTable,
  OperatorApiKeysTable,
  OperatorInvitationsTable,
  OperatorSessionsTable,
  OperatorsTable,
  SealingKeysTable,
  ServiceStateTable,
} from './schema/operators.js';

export type * from './schema/games.js';
export type * from './schema/orders.js';
export type * from './schema/payments.js';
export type * from './schema/notifications.js';
export type * from './schema/compliance.js';
export type * from './schema/partners.js';
export type * from './schema/operators.js';

/**
 * Table types for Kysely, one file a domain in schema/. Times are integer Unix ms, money integer
 * minor units, booleans 0/1 integers (the same on SQLite and PostgreSQL).
 */
export interface DB {
  games: GamesTable;
  game_keys: GameKeysTable;
  products: ProductsTable;
  orders: OrdersTable;
  order_events: OrderEventsTable;
  payments: PaymentsTable;
  game_channels: GameChannelsTable;
  order_account_tokens: OrderAccountTokensTable;
  provider_payments: ProviderPaymentsTable;
  provider_refunds: ProviderRefundsTable;
  reconciliations: ReconciliationsTable;
  reconciliation_schedule: ReconciliationScheduleTable;
  notifications: NotificationsTable;
  notification_attempts: NotificationAttemptsTable;
  sessions: SessionsTable;
  nppa_events: NppaEventsTable;
  nppa_leases: NppaLeasesTable;
  players: PlayersTable;
  partners: PartnersTable;
  partner_keys: PartnerKeysTable;
  partner_games: PartnerGamesTable;
  bindings: BindingsTable;
  audit_log: AuditLogTable;
  service_state: ServiceStateTable;
  google_purchases: GooglePurchasesTable;
  sealing_keys: SealingKeysTable;
  operators: OperatorsTable;
  operator_invitations: OperatorInvitationsTable;
  operator_sessions: OperatorSessionsTable;
  operator_api_keys: OperatorApiKeysTable;
}

// Kept for tables that may later gain generated columns.
export type { Generated };
