import type { DomainMetrics } from '../observability/metrics.js';
import type { Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import { Errors } from '../errors.js';
import type { GameSnapshot } from '../games/service.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import { refuseInternalUrl } from '../lib/outbound.js';
import type { CreateOrderBody, CreateOrderResponse, OrderMeta } from './schemas.js';
import { isUniqueViolation, type OrderRow, type OrderStore } from './store.js';
import { formatOrderToken, newTokenSecret } from './token.js';

/** A purchase about to be created, as business rules (bans, minors' limits) see it. */
export interface PurchaseAttempt {
  gameId: string;
  comboId: string;
  amount: number;
  currency: string;
  now: number;
}

/**
 * Business rules run inside the creating transaction (so concurrent orders see each other).
 * They apply only to players with a record in `players` (PROTOCOL 12): an order of any other
 * player passes, which lets PostgreSQL create it in one statement (OrderStore.createAtOnce).
 */
export interface PurchaseGuard {
  /**
   * Locks the player's record for the rest of the transaction, so that one player's orders are
   * checked one at a time, and returns the checks to run under that lock; null for a player
   * without a record (nothing to check).
   */
  lock(trx: Transaction<DB>, gameId: string, comboId: string): Promise<PurchaseCheck | null>;
}

/** The business rules for one attempt, run while the player is locked; throws to refuse. */
export type PurchaseCheck = (attempt: PurchaseAttempt) => Promise<void>;

export interface OrderServiceDeps {
  store: OrderStore;
  clock: Clock;
  ids: IdGenerator;
  guard?: PurchaseGuard;
  /**
   * Refuse a notify_url whose host is a literal internal address (production without
   * ALLOW_PRIVATE_NOTIFY_URLS): it could never be delivered, so say so now rather than retry
   * it for days. Host names are judged at delivery, after DNS.
   */
  refuseInternalUrls?: boolean;
  /** Told when a new order's id was taken already (see create): a NODE_ID shared by instances. */
  onIdCollision?: (orderId: string) => void;
  /** Counts new orders per game for /metrics (src/observability). */
  metrics?: Pick<DomainMetrics, 'orderCreated'>;
}

/** A taken order id is replaced this many times at most (each time by the next id). */
const MAX_ID_ATTEMPTS = 8;

/** The validated, defaulted parameters of a create-order request, in a fixed key order. */
function canonicalParams(body: CreateOrderBody) {
  const meta = normalizeMeta(body.meta);
  return {
    reference_id: body.reference_id,
    combo_id: body.combo_id,
    product_id: body.product_id,
    platform: body.platform,
    notify_url: body.notify_url,
    quantity: body.quantity ?? 1,
    meta,
    context: body.context ?? null,
  };
}

type CanonicalParams = ReturnType<typeof canonicalParams>;

/** The order columns a repeated request must match. */
type ParameterColumns = Pick<OrderRow, 'combo_id' | 'product_id' | 'platform' | 'notify_url' | 'quantity' | 'meta' | 'context'>;

/**
 * The meta fields present, in one fixed order (the stored JSON, which replays compare), or null
 * when none is. Field by field: a loop over the names made every load and store megamorphic.
 */
function normalizeMeta(meta: OrderMeta | undefined): OrderMeta | null {
  if (!meta) return null;
  const out: OrderMeta = {};
  if (meta.zone_id !== undefined) out.zone_id = meta.zone_id;
  if (meta.server_id !== undefined) out.server_id = meta.server_id;
  if (meta.role_id !== undefined) out.role_id = meta.role_id;
  if (meta.role_name !== undefined) out.role_name = meta.role_name;
  if (meta.role_level !== undefined) out.role_level = meta.role_level;
  // No field is ever null (the schema), so ?? finds the first one present.
  return (out.zone_id ?? out.server_id ?? out.role_id ?? out.role_name ?? out.role_level) === undefined ? null : out;
}

export class OrderService {
  constructor(private readonly d: OrderServiceDeps) {}

  /**
   * create-order (PROTOCOL 3): idempotent per (game, reference_id). A reference identifies one
   * order forever, so a request the game's current state would refuse (IAP off, the product
   * inactive, ...) is first looked up: a repeat of an existing order gets it back. The lookup is
   * made only on that refusing branch, so a new order costs no extra read.
   */
  async create(snap: GameSnapshot, body: CreateOrderBody): Promise<CreateOrderResponse> {
    const game = snap.game;
    const params = canonicalParams(body);
    const product = snap.products.get(params.product_id);
    if (game.iap_enabled !== 1) {
      return this.repeatOr(Errors.gameIapDisabled('in-app purchase is disabled for this game'), game.game_id, params);
    }
    if (this.d.refuseInternalUrls) {
      try {
        refuseInternalUrl('notify_url', params.notify_url);
      } catch (e) {
        return this.repeatOr(e as Error, game.game_id, params);
      }
    }
    if (!product || product.active !== 1) {
      const refusal = Errors.invalidRequest(`product_id ${params.product_id} is not an active product of game ${game.game_id}`);
      return this.repeatOr(refusal, game.game_id, params);
    }
    const now = this.d.clock.now();
    let row = this.newOrder(snap, params, product.price * params.quantity, product.currency, now);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.write(row);
      } catch (e) {
        if (!isUniqueViolation(e)) throw e;
        // A concurrent identical request committed first (PostgreSQL): answer as a replay.
        const winner = await this.d.store.findByReference(this.d.store.db, game.game_id, params.reference_id);
        if (winner) return replay(winner, row);
        // Not the reference_id: the order id is taken. Two instances given one NODE_ID, or a
        // clock stepped back across a restart, hand out the same ids: go on from a random
        // point (the next id is likely being handed out by the other one too). Out of tries:
        // 503, retryable (a retry with this reference_id is safe), not 500.
        if (attempt >= MAX_ID_ATTEMPTS) throw Errors.serviceUnavailable('could not find a free order id (is NODE_ID shared by two instances?); retry');
        this.d.onIdCollision?.(row.order_id);
        this.d.ids.jump();
        row = { ...row, order_id: this.d.ids.next(now) };
      }
    }
  }

  /**
   * Whether a create-order body, not yet validated, names an order the game already has: such a
   * request passes the caller-state check (IAP off), and create answers it with the order if its
   * parameters are the order's, else with that check's refusal. Only called when the check fails.
   */
  async isRepeat(gameId: string, rawBody: Buffer | null | undefined): Promise<boolean> {
    let referenceId: unknown;
    try {
      referenceId = (JSON.parse(rawBody?.toString('utf8') ?? 'null') as { reference_id?: unknown } | null)?.reference_id;
    } catch {
      return false;
    }
    if (typeof referenceId !== 'string' || referenceId === '') return false;
    return (await this.d.store.findByReference(this.d.store.db, gameId, referenceId)) !== undefined;
  }

  /**
   * The stored order when the request repeats one with the same parameters (PROTOCOL 3), else
   * the refusal: it comes before 422 in the check order (PROTOCOL 2).
   */
  private async repeatOr(refusal: Error, gameId: string, params: CanonicalParams): Promise<CreateOrderResponse> {
    const existing = await this.d.store.findByReference(this.d.store.db, gameId, params.reference_id);
    const requested = { ...params, meta: params.meta ? JSON.stringify(params.meta) : null };
    if (existing && sameParameters(existing, requested)) return toResponse(existing);
    throw refusal;
  }

  /** Writes a new order, or answers from the one stored under its reference_id. */
  private async write(row: OrderRow): Promise<CreateOrderResponse> {
    const { store, guard } = this.d;
    // The common case on PostgreSQL, a new order of an unguarded player, is one statement; a
    // replay or a guarded player falls through to the transaction.
    if (store.createsAtOnce && (await store.createAtOnce(row))) {
      this.d.metrics?.orderCreated(row.game_id);
      return toResponse(row);
    }
    // The job leaves nothing behind when it throws (its one write comes last, or writes
    // nothing), so it needs no savepoint (TransactionOptions.noSavepoint). The order's timeline
    // starts with its creation, which the row itself records (created_at): no event row is
    // written for it (OrderAdminService.detail shows it).
    const stored = await store.transaction(async (trx) => {
      const check = await guard?.lock(trx, row.game_id, row.combo_id);
      if (check) {
        // Read under the player's lock: on PostgreSQL the lock may have been waited for, behind
        // an identical request that has committed since; it is answered as a replay, not
        // refused by a limit its own order now fills (PROTOCOL 3: the later request waits for
        // the first, it does not fail).
        const existing = await store.findByReference(trx, row.game_id, row.reference_id);
        if (existing) return existing;
        await check({ gameId: row.game_id, comboId: row.combo_id, amount: row.amount, currency: row.currency, now: row.created_at });
      }
      // The insert itself finds a reference_id in use (and writes nothing), so a new order of a
      // player without checks is one statement; only a repeat reads the order it repeats.
      if (await store.insertUnlessReferenced(trx, row)) return row;
      const existing = await store.findByReference(trx, row.game_id, row.reference_id);
      if (!existing) throw new Error(`order ${row.reference_id} of game ${row.game_id} was neither inserted nor found`);
      return existing;
    }, { noSavepoint: true });
    if (stored === row) this.d.metrics?.orderCreated(row.game_id);
    return replay(stored, row);
  }

  private newOrder(
    snap: GameSnapshot,
    params: CanonicalParams,
    amount: number,
    currency: string,
    now: number,
  ): OrderRow {
    return {
      order_id: this.d.ids.next(now),
      game_id: snap.game.game_id,
      reference_id: params.reference_id,
      combo_id: params.combo_id,
      product_id: params.product_id,
      platform: params.platform,
      notify_url: params.notify_url,
      quantity: params.quantity,
      meta: params.meta ? JSON.stringify(params.meta) : null,
      context: params.context,
      amount,
      currency,
      status: 'created',
      token_secret: newTokenSecret(),
      is_sandbox: 0,
      late_payment: 0,
      created_at: now,
      expires_at: now + snap.game.order_ttl_seconds * 1000,
      updated_at: now,
      paid_at: null,
      delivered_at: null,
      expired_at: null,
      canceled_at: null,
      refunded_at: null,
    };
  }
}

/**
 * The stored order for a repeated reference_id: the original answer when the request's validated
 * parameters are those the order was created with (PROTOCOL 3), else 422. Every parameter is a
 * column of the order, canonicalised the same way (canonicalParams), so comparing them costs
 * less than hashing a serialisation of them on every create-order.
 */
function replay(existing: OrderRow, requested: ParameterColumns): CreateOrderResponse {
  if (existing !== requested && !sameParameters(existing, requested)) {
    throw Errors.duplicateReferenceId(`reference_id ${existing.reference_id} was already used with different parameters`);
  }
  return toResponse(existing);
}

function sameParameters(a: ParameterColumns, b: ParameterColumns): boolean {
  return (
    a.combo_id === b.combo_id &&
    a.product_id === b.product_id &&
    a.platform === b.platform &&
    a.notify_url === b.notify_url &&
    a.quantity === b.quantity &&
    a.meta === b.meta &&
    a.context === b.context
  );
}

function toResponse(row: OrderRow): CreateOrderResponse {
  return {
    order_id: row.order_id,
    order_token: formatOrderToken(row.order_id, row.token_secret),
    expires_at: Math.floor(row.expires_at / 1000),
  };
}

