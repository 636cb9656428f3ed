// Table types (db/schema.ts): notifications to game servers and their delivery attempts.

export type NotificationStatus = 'pending' | 'succeeded' | 'failed' | 'gone';

export interface NotificationsTable {
  notification_id: string;
  order_id: string;
  game_id: string;
  type: 'ship_order' | 'refund';
  notify_url: string;
  body: string;
  status: NotificationStatus;
  attempts: number;
  next_attempt_at: number;
  locked_until: number;
  locked_by: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
  /** Start of the retry window; null = created_at (added by 0002_notifications_window). */
  window_started_at: number | null;
}

export interface NotificationAttemptsTable {
  attempt_id: string;
  notification_id: string;
  at: number;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_snippet: string | null;
}
