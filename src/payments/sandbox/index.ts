import { Type } from 'typebox';
import { Errors } from '../../errors.js';
import type { PayableOrder, PaymentProvider, PaymentStart, VerifiedPayment } from '../provider.js';

export const SandboxSettings = Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false });

/**
 * The `sandbox` channel: confirms at once and moves no money, for testers and integration
 * work. Off for a new game; a game turns it on explicitly (payments.md 1). Its transaction id
 * is derived from the order, so paying one order twice (a double click, a retry, two tabs) is
 * the same provider transaction: idempotent by construction.
 */
export class SandboxProvider implements PaymentProvider {
  readonly name = 'sandbox';
  readonly sandbox = true;
  readonly settingsBody = SandboxSettings;
  readonly secretFields = [] as const;
  readonly hasCallbacks = false;

  async start(order: PayableOrder): Promise<PaymentStart> {
    const confirmation: VerifiedPayment = {
      provider_txn_id: `sbx_${order.order_id}`,
      order_id: order.order_id,
      amount: order.amount,
      currency: order.currency,
    };
    return { kind: 'confirmed', confirmation };
  }

  async verify(confirmation: unknown): Promise<VerifiedPayment> {
    const c = confirmation as Partial<VerifiedPayment> | null;
    const ok =
      c !== null &&
      typeof c === 'object' &&
      typeof c.provider_txn_id === 'string' &&
      c.provider_txn_id.length > 0 &&
      c.provider_txn_id.length <= 128 &&
      typeof c.order_id === 'string' &&
      Number.isSafeInteger(c.amount) &&
      typeof c.currency === 'string';
    if (!ok) throw Errors.invalidRequest('sandbox confirmation is malformed');
    return { provider_txn_id: c.provider_txn_id!, order_id: c.order_id!, amount: c.amount!, currency: c.currency! };
  }
}
