/**
 * The console's whole data layer: every call to the operator API (/admin/v1, PROTOCOL 11) and
 * the shapes it expects. Shapes are read defensively: pages render what they recognise and
 * show the raw JSON of anything else, so a renamed field degrades the view instead of breaking it.
 */
import type { Static } from 'typebox';
import type { AuditEntry as AuditEntrySchema } from '../../src/admin/audit-schemas';
import type { Game as GameSchema, NewKey, Product as ProductSchema } from '../../src/games/schemas';
import type {
  DeliveryHealth as DeliveryHealthSchema, DeliveryRate as DeliveryRateSchema, HostHealth as HostHealthSchema, Notification as NotificationSchema,
  NotificationDetail as NotificationDetailSchema, RedeliverCount, RetryCount,
} from '../../src/notifications/schemas';
import type { Partner as PartnerSchema } from '../../src/partners/schemas';
import type { ChannelView } from '../../src/payments/channel-schemas';
import type { Reconciliation as ReconciliationSchema, ReconciliationDifference as ReconciliationDifferenceSchema } from '../../src/payments/reconciliation/schemas';
import type { ListedPayment as ListedPaymentSchema } from '../../src/payments/schemas';
import type { SessionPage as SessionPageSchema, SessionView } from '../../src/sessions/schemas';
import type {
  AdminOrder, AdminOrderDetail, AdminPayment, NotificationAttempt, OrderEvent as OrderEventSchema, OrderNotification as OrderNotificationSchema,
} from '../../src/orders/admin-schemas';
import { encodeOperatorName } from '../../src/lib/operator-name';
import type { ApiKey as ApiKeySchema, Me as MeSchema, NewApiKey as NewApiKeySchema, Operator as OperatorSchema, OperatorWithInvitation, SessionView as OperatorSessionSchema, SignInOptions as SignInOptionsSchema, TotpSetup as TotpSetupSchema } from '../../src/operators/schemas';

const TOKEN_KEY = 'combo.console.token';
const OPERATOR_KEY = 'combo.console.operator';
const RECENT_GAMES_KEY = 'combo.console.recentGames';

// ---------------------------------------------------------------- token and errors

export const session = {
  token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  /** The operator's name, sent as X-Operator so the audit log says who (informational). */
  operator(): string | null {
    return sessionStorage.getItem(OPERATOR_KEY);
  },
  signIn(token: string, operator = ''): void {
    sessionStorage.setItem(TOKEN_KEY, token);
    if (operator) sessionStorage.setItem(OPERATOR_KEY, operator);
    else sessionStorage.removeItem(OPERATOR_KEY);
  },
  signOut(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

/** A non-2xx answer: the ErrorResponse's `error` code and `message` (rest-interface 2.7). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let unauthorizedHandler: () => void = () => {};
/** What to do when the API answers 401 (the app returns to the sign-in page). */
export function onUnauthorized(handler: () => void): void {
  unauthorizedHandler = handler;
}

/** The API's answer to one call, its error (ApiError) thrown; 401 also signs out. */
async function request(method: string, path: string, body?: unknown, token = session.token()): Promise<{ res: Response; text: () => Promise<string> }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  // Names in any script: non-ASCII ones travel encoded (RFC 8187, lib/operator-name.ts).
  const operator = session.operator();
  const named = operator ? encodeOperatorName(operator) : null;
  if (named) headers['x-operator'] = named;
  // A console session's writes carry its CSRF token (the cookie goes by itself).
  if (method !== 'GET' && !token && account.csrf) headers['x-csrf-token'] = account.csrf;
  const hasBody = method !== 'GET' && method !== 'DELETE';
  // The API parses every POST/PUT/PATCH body as a JSON object: send {} when there is nothing.
  if (hasBody) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: hasBody ? JSON.stringify(body ?? {}) : undefined });
  if (res.ok) return { res, text: () => res.text() };
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: its text is the message */
  }
  const e = (json ?? {}) as { error?: string; message?: string };
  const err = new ApiError(res.status, e.error ?? `http_${res.status}`, e.message ?? (text.slice(0, 200) || res.statusText));
  if (res.status === 401) {
    session.signOut();
    unauthorizedHandler();
  }
  throw err;
}

async function call<T = unknown>(method: string, path: string, body?: unknown, token = session.token()): Promise<T> {
  const text = await (await request(method, path, body, token)).text();
  try {
    return (text ? JSON.parse(text) : undefined) as T;
  } catch {
    return undefined as T; // a 2xx without JSON: nothing to show
  }
}

function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

const enc = encodeURIComponent;

// ---------------------------------------------------------------- shapes

/** One page of a cursor-paged list. `raw` keeps the answer when it was not `{data, next_cursor}`. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
  raw?: unknown;
}

export function asPage<T>(x: unknown): Page<T> {
  if (Array.isArray(x)) return { data: x as T[], next_cursor: null };
  const o = (x ?? {}) as Record<string, unknown>;
  const list = o.data ?? o.items ?? o.orders ?? o.notifications ?? o.sessions ?? o.partners;
  if (Array.isArray(list)) {
    const cursor = o.next_cursor ?? o.cursor ?? null;
    return { ...(o as object), data: list as T[], next_cursor: typeof cursor === 'string' && cursor ? cursor : null } as Page<T>;
  }
  return { data: [], next_cursor: null, raw: x };
}

export type Game = Static<typeof GameSchema>;
export type GamePatch = Partial<Pick<Game, 'name' | 'iap_enabled' | 'sandbox_payments' | 'order_ttl_seconds' | 'gm_url' | 'rate_limit_per_second'>>;

export type NewSecret = Static<typeof NewKey>;

export type Product = Static<typeof ProductSchema>;
export type ProductInput = Pick<Product, 'name' | 'price' | 'currency' | 'active'>;

export type Partner = Static<typeof PartnerSchema>;

export const ORDER_STATUSES = ['created', 'paid', 'delivered', 'expired', 'canceled', 'refund_pending', 'refund_failed', 'refunded'] as const;

export type Order = Static<typeof AdminOrder>;

export type OrderEvent = Static<typeof OrderEventSchema>;

/** A payment of an order (GET /admin/v1/orders/:order_id). */
export type Payment = Static<typeof AdminPayment>;
/** A payment in the payments listing, with its order and game. */
export type ListedPayment = Static<typeof ListedPaymentSchema>;

/** A game's payment channel: its settings (secrets as "***") and the URL for the provider's console. */
export type Channel = Static<typeof ChannelView> & Record<string, unknown>;

/** A reconciliation run (payments.md 6): a channel's statement of one day against the payments. */
export type Reconciliation = Static<typeof ReconciliationSchema>;
export type ReconciliationDifference = Static<typeof ReconciliationDifferenceSchema>;

export type Attempt = Static<typeof NotificationAttempt>;

/** `failing`: its latest attempt failed and it will be retried (docs/notifications.md). */
export const NOTIFICATION_STATUSES = ['pending', 'failing', 'succeeded', 'failed', 'gone'] as const;

export type DeliveryRate = Static<typeof DeliveryRateSchema>;
/** One notify host of a game (GET /admin/v1/games/:game_id/delivery-health). */
export type HostHealth = Static<typeof HostHealthSchema>;
export type DeliveryHealth = Static<typeof DeliveryHealthSchema>;

/** A notification in the notifications listing. */
export type Notification = Static<typeof NotificationSchema>;
/** One notification with its body and attempts (redeliver, retry). */
export type NotificationDetail = Static<typeof NotificationDetailSchema>;
/** A notification of an order, with its attempts (GET /admin/v1/orders/:order_id). */
export type OrderNotification = Static<typeof OrderNotificationSchema>;

/** `notification_type` in the notifications listing, `type` inside an order. */
export const notificationType = (n: Notification | OrderNotification): string => ('notification_type' in n ? n.notification_type : n.type);

export type OrderDetail = Static<typeof AdminOrderDetail>;

export type GameSession = Static<typeof SessionView>;
export type SessionPage = Page<GameSession> & Pick<Static<typeof SessionPageSchema>, 'online_days'>;

export type AuditEntry = Static<typeof AuditEntrySchema>;

// ---------------------------------------------------------------- calls

export const api = {
  /** Checks a token without keeping it: 401 means it is wrong. */
  async checkToken(token: string): Promise<void> {
    await call('GET', '/admin/v1/partners?limit=1', undefined, token);
  },

  game: (id: string) => call<Game>('GET', `/admin/v1/games/${enc(id)}`),
  createGame: (body: { game_id: string; name: string }) => call<Game & NewSecret>('POST', '/admin/v1/games', body),
  patchGame: (id: string, patch: GamePatch) => call<Game>('PATCH', `/admin/v1/games/${enc(id)}`, patch),
  createGameKey: (id: string) => call<NewSecret>('POST', `/admin/v1/games/${enc(id)}/keys`),
  deleteGameKey: (id: string, keyId: string) => call('DELETE', `/admin/v1/games/${enc(id)}/keys/${enc(keyId)}`),
  async products(id: string): Promise<Page<Product>> {
    return asPage<Product>(await call('GET', `/admin/v1/games/${enc(id)}/products`));
  },
  putProduct: (id: string, productId: string, body: ProductInput) =>
    call<Product>('PUT', `/admin/v1/games/${enc(id)}/products/${enc(productId)}`, body),

  async channels(id: string): Promise<Page<Channel>> {
    return asPage<Channel>(await call('GET', `/admin/v1/games/${enc(id)}/channels`));
  },
  putChannel: (id: string, channel: string, body: Record<string, unknown>) => call<Channel>('PUT', `/admin/v1/games/${enc(id)}/channels/${enc(channel)}`, body),
  deleteChannel: (id: string, channel: string) => call('DELETE', `/admin/v1/games/${enc(id)}/channels/${enc(channel)}`),
  async payments(f: { status?: string; game_id?: string; cursor?: string }): Promise<Page<ListedPayment>> {
    return asPage<ListedPayment>(await call('GET', `/admin/v1/payments${query({ limit: 50, ...f })}`));
  },

  async reconciliations(f: { game_id?: string; channel?: string }): Promise<Page<Reconciliation>> {
    return asPage<Reconciliation>(await call('GET', `/admin/v1/reconciliations${query({ limit: 100, ...f })}`));
  },
  runReconciliation: (body: { channel: string; game_id: string; date: string }) => call<Reconciliation>('POST', '/admin/v1/reconciliations', body),

  async games(cursor?: string): Promise<Page<Game>> {
    return asPage<Game>(await call('GET', `/admin/v1/games${query({ limit: 50, cursor })}`));
  },

  async partners(cursor?: string): Promise<Page<Partner>> {
    return asPage<Partner>(await call('GET', `/admin/v1/partners${query({ limit: 50, cursor })}`));
  },
  partner: (id: string) => call<Partner>('GET', `/admin/v1/partners/${enc(id)}`),
  createPartner: (body: { partner_id: string; name: string; games: string[] }) => call<Partner & NewSecret>('POST', '/admin/v1/partners', body),
  patchPartner: (id: string, patch: Partial<Pick<Partner, 'name' | 'enabled' | 'games' | 'rate_limit_per_second'>>) =>
    call<Partner>('PATCH', `/admin/v1/partners/${enc(id)}`, patch),
  createPartnerKey: (id: string) => call<NewSecret>('POST', `/admin/v1/partners/${enc(id)}/keys`),
  deletePartnerKey: (id: string, keyId: string) => call('DELETE', `/admin/v1/partners/${enc(id)}/keys/${enc(keyId)}`),

  async orders(f: { game_id?: string; status?: string; combo_id?: string; reference_id?: string; limit?: number; cursor?: string }): Promise<Page<Order>> {
    return asPage<Order>(await call('GET', `/admin/v1/orders${query({ limit: 50, ...f })}`));
  },
  /** The CSV export of an order listing (every matching order) and its file name. */
  async ordersCsv(f: { game_id?: string; status?: string; combo_id?: string; reference_id?: string }): Promise<{ blob: Blob; filename: string }> {
    const { res } = await request('GET', `/admin/v1/orders.csv${query(f)}`);
    const filename = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'orders.csv';
    return { blob: await res.blob(), filename };
  },
  order: (orderId: string) => call<OrderDetail>('GET', `/admin/v1/orders/${enc(orderId)}`),
  refundOrder: (orderId: string, reason?: string) => call<Order>('POST', `/admin/v1/orders/${enc(orderId)}/refund`, reason ? { reason } : {}),
  cancelOrder: (orderId: string, reason?: string) => call<Order>('POST', `/admin/v1/orders/${enc(orderId)}/cancel`, reason ? { reason } : {}),

  async notifications(f: { status?: string; game_id?: string; limit?: number; cursor?: string }): Promise<Page<Notification>> {
    return asPage<Notification>(await call('GET', `/admin/v1/notifications${query({ limit: 50, ...f })}`));
  },
  redeliver: (notificationId: string) => call<NotificationDetail>('POST', `/admin/v1/notifications/${enc(notificationId)}/redeliver`),
  retry: (notificationId: string) => call<NotificationDetail>('POST', `/admin/v1/notifications/${enc(notificationId)}/retry`),
  retryFailing: (gameId: string) => call<Static<typeof RetryCount>>('POST', `/admin/v1/games/${enc(gameId)}/notifications/retry`),
  deliveryHealth: (gameId: string) => call<DeliveryHealth>('GET', `/admin/v1/games/${enc(gameId)}/delivery-health`),
  redeliverSince: (gameId: string, since: number) =>
    call<Static<typeof RedeliverCount>>('POST', `/admin/v1/games/${enc(gameId)}/notifications/redeliver`, { since }),

  async audit(f: { action?: string; target?: string; actor?: string; cursor?: string }): Promise<Page<AuditEntry>> {
    return asPage<AuditEntry>(await call('GET', `/admin/v1/audit${query({ limit: 50, ...f })}`));
  },

  async sessions(f: { game_id?: string; combo_id?: string; open?: boolean; limit?: number; cursor?: string }): Promise<SessionPage> {
    return asPage<GameSession>(await call('GET', `/admin/v1/sessions${query({ limit: 50, ...f })}`)) as SessionPage;
  },
};

// ---------------------------------------------------------------- recently used games

/** Each person's own list: an account's key has its id; ADMIN_TOKEN sign-ins share the plain key. */
const recentGamesKey = (): string => (account.operatorId ? `${RECENT_GAMES_KEY}.${account.operatorId}` : RECENT_GAMES_KEY);

export const recentGames = {
  list(): string[] {
    try {
      const v = JSON.parse(localStorage.getItem(recentGamesKey()) ?? '[]') as unknown;
      return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
    } catch {
      return [];
    }
  },
  /** The most recently used game: the default filter of the orders, notifications and sessions pages. */
  current(): string {
    return recentGames.list()[0] ?? '';
  },
  use(id: string): void {
    const next = [id, ...recentGames.list().filter((g) => g !== id)].slice(0, 10);
    localStorage.setItem(recentGamesKey(), JSON.stringify(next));
  },
  forget(id: string): void {
    localStorage.setItem(recentGamesKey(), JSON.stringify(recentGames.list().filter((g) => g !== id)));
  },
};

// ---------------------------------------------------------------- operator accounts (operators.md 1)

/** The console session of an account signed in with a password or OIDC (none for ADMIN_TOKEN). */
export const account: { operatorId: string | null; csrf: string | null } = { operatorId: null, csrf: null };

export type Me = Static<typeof MeSchema>;
export type SignInOptions = Static<typeof SignInOptionsSchema>;
export type OperatorAccount = Static<typeof OperatorSchema>;
export type NewOperatorAccount = Static<typeof OperatorWithInvitation>;
export type ApiKey = Static<typeof ApiKeySchema>;
export type NewApiKey = Static<typeof NewApiKeySchema>;
export type OperatorSession = Static<typeof OperatorSessionSchema>;
export type TotpSetup = Static<typeof TotpSetupSchema>;
export type Invitation = { email: string; name: string; expires_at: number };

/** Remembers who is signed in: their CSRF token and the key of their recently used games. */
export function rememberAccount(me: Me | null): void {
  account.operatorId = me?.kind === 'account' ? (me.operator?.operator_id ?? null) : null;
  account.csrf = me?.csrf_token ?? null;
}

export const operatorsApi = {
  /** Who the caller is; with no token, the console session's cookie (401 without one). */
  me: (token = session.token()) => call<Me>('GET', '/admin/v1/me', undefined, token),
  signInOptions: () => call<SignInOptions>('GET', '/admin/v1/sign-in-options', undefined, null),
  signIn: (body: { email: string; password: string; totp?: string }) => call<{ csrf_token: string }>('POST', '/admin/v1/session', body, null),
  signOut: () => call('DELETE', '/admin/v1/session', undefined, null),
  invitation: (token: string) => call<Invitation>('GET', `/admin/v1/invitations/${enc(token)}`, undefined, null),
  acceptInvitation: (token: string, password: string) => call<OperatorAccount>('POST', `/admin/v1/invitations/${enc(token)}`, { password }, null),

  async operators(): Promise<Page<OperatorAccount>> {
    return asPage<OperatorAccount>(await call('GET', '/admin/v1/operators'));
  },
  invite: (body: { email: string; name: string; role: string; games?: string[] | null }) => call<NewOperatorAccount>('POST', '/admin/v1/operators', body),
  patchOperator: (id: string, patch: { role?: string; games?: string[] | null; disabled?: boolean }) => call<OperatorAccount>('PATCH', `/admin/v1/operators/${enc(id)}`, patch),

  async apiKeys(): Promise<Page<ApiKey>> {
    return asPage<ApiKey>(await call('GET', '/admin/v1/api-keys'));
  },
  createApiKey: (body: { name: string; role: string; games?: string[] | null; expires_at?: number | null }) => call<NewApiKey>('POST', '/admin/v1/api-keys', body),
  revokeApiKey: (keyId: string) => call('DELETE', `/admin/v1/api-keys/${enc(keyId)}`),

  async mySessions(): Promise<Page<OperatorSession>> {
    return asPage<OperatorSession>(await call('GET', '/admin/v1/me/sessions'));
  },
  revokeMySession: (id: string) => call('DELETE', `/admin/v1/me/sessions/${enc(id)}`),
  changePassword: (currentPassword: string, newPassword: string) => call('PUT', '/admin/v1/me/password', { current_password: currentPassword, new_password: newPassword }),
  startTotp: () => call<TotpSetup>('POST', '/admin/v1/me/totp'),
  verifyTotp: (code: string) => call('POST', '/admin/v1/me/totp/verify', { code }),
  removeTotp: () => call('DELETE', '/admin/v1/me/totp'),
};
