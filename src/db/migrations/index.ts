import type { Migration } from 'kysely';
import * as m0001 from './0001_initial.js';
import * as m0002 from './0002_compliance_nppa.js';
import * as m0002n from './0002_notifications_window.js';
import * as m0002o from './0002_orders_listing.js';
import * as m0003 from './0003_orders_drop_redundant_index.js';
import * as m0004 from './0004_admin_listing_indexes.js';
import * as m0005 from './0005_sessions_open_closed_indexes.js';
import * as m0006 from './0006_nppa_backlog_order.js';
import * as m0007 from './0007_nppa_sent_identity.js';
import * as m0008 from './0008_nppa_leases_shift_at.js';
import * as m0009 from './0009_sessions_drop_game_created.js';
import * as m0010 from './0010_listing_status_statistics.js';
import * as m0011 from './0011_sessions_player_index_derived.js';
import * as m0012 from './0012_payment_channels.js';
import * as m0013 from './0013_google_purchases.js';
import * as m0014 from './0014_provider_payments.js';
import * as m0015 from './0015_reconciliations.js';
import * as m0016 from './0016_games_gm_last_error.js';
import * as m0017 from './0017_sealing_keys.js';
import * as m0018 from './0018_orders_drop_request_hash.js';
import * as m0019 from './0019_games_last_used_key.js';
import * as m0020 from './0020_reconciliation_schedule.js';
import * as m0021 from './0021_notification_attempts_at.js';
import * as m0022 from './0022_operator_accounts.js';
import * as m0023 from './0023_audit_address_game_totp_step.js';
import * as m0024 from './0024_orders_drop_created.js';
import * as m0025 from './0025_orders_player_index_derived.js';

/**
 * Versioned migrations, applied in name order, forward only. Add a new file
 * `NNNN_description.ts` and list it here; never edit one that has shipped.
 */
export const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_compliance_nppa': m0002,
  '0002_notifications_window': m0002n,
  '0002_orders_listing': m0002o,
  '0003_orders_drop_redundant_index': m0003,
  '0004_admin_listing_indexes': m0004,
  '0005_sessions_open_closed_indexes': m0005,
  '0006_nppa_backlog_order': m0006,
  '0007_nppa_sent_identity': m0007,
  '0008_nppa_leases_shift_at': m0008,
  '0009_sessions_drop_game_created': m0009,
  '0010_listing_status_statistics': m0010,
  '0011_sessions_player_index_derived': m0011,
  '0012_payment_channels': m0012,
  '0013_google_purchases': m0013,
  '0014_provider_payments': m0014,
  '0015_reconciliations': m0015,
  '0016_games_gm_last_error': m0016,
  '0017_sealing_keys': m0017,
  '0018_orders_drop_request_hash': m0018,
  '0019_games_last_used_key': m0019,
  '0020_reconciliation_schedule': m0020,
  '0021_notification_attempts_at': m0021,
  '0022_operator_accounts': m0022,
  '0023_audit_address_game_totp_step': m0023,
  '0024_orders_drop_created': m0024,
  '0025_orders_player_index_derived': m0025,
};
