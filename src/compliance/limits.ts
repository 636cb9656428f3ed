/**
 * Minors' spending rules (nppa.md "Rules for minors", PROTOCOL 12), in CNY minor units (fen).
 * Only CNY orders of players with a recorded birth date are limited.
 */
export interface SpendingLimit {
  /** Age bracket the rule belongs to, for messages. */
  bracket: 'under_8' | '8_15' | '16_17';
  perOrder: number;
  perMonth: number;
}

export function spendingLimitFor(age: number): SpendingLimit | null {
  if (age < 8) return { bracket: 'under_8', perOrder: 0, perMonth: 0 };
  if (age < 16) return { bracket: '8_15', perOrder: 5000, perMonth: 20000 };
  if (age < 18) return { bracket: '16_17', perOrder: 10000, perMonth: 40000 };
  return null;
}

export type LimitVerdict = { ok: true } | { ok: false; message: string };

/** Whether an order of `amount` fits, given what the month already counts (`monthTotal`). */
export function checkSpending(limit: SpendingLimit, age: number, amount: number, monthTotal: number): LimitVerdict {
  if (limit.perMonth === 0) return { ok: false, message: `players under 8 may not pay (player is ${age})` };
  const remaining = Math.max(0, limit.perMonth - monthTotal);
  if (amount > limit.perOrder) {
    return {
      ok: false,
      message: `amount ${amount} is over the per-payment limit of ${limit.perOrder} CNY minor units for a player aged ${age}; ${remaining} remains this month`,
    };
  }
  if (amount > remaining) {
    return {
      ok: false,
      message: `amount ${amount} is over the monthly limit of ${limit.perMonth} CNY minor units for a player aged ${age}; ${remaining} remains this month`,
    };
  }
  return { ok: true };
}
