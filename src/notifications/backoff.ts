/**
 * The retry schedule of delivery notifications (PROTOCOL 5), published in
 * docs/notifications.md: after the n-th failed attempt the next one waits a random time in
 * [d/2, d] where d = base * 3^(n-1), capped at base * 3^7 from the 8th attempt on. With the
 * default base of 10 s: seconds, then minutes, then hours (3 h..6 h between late attempts).
 * The jitter spreads retries of many notifications that failed together (a game's outage) so
 * they do not all hit the recovering game in the same second.
 */
export const GROWTH = 3;
export const CAP_EXPONENT = 7;

/** Nominal (maximum) delay after the n-th failed attempt (n >= 1). */
export function nominalDelay(n: number, baseMs: number): number {
  return baseMs * GROWTH ** Math.min(Math.max(n, 1) - 1, CAP_EXPONENT);
}

/** The delay actually used: uniform in [nominal/2, nominal]. `random` is in [0, 1). */
export function retryDelay(n: number, baseMs: number, random: () => number = Math.random): number {
  const d = nominalDelay(n, baseMs);
  return Math.round(d / 2 + (d / 2) * random());
}

/**
 * When to try again after the n-th failed attempt, or null when that would fall outside the
 * retry window (the notification is then `failed`).
 */
export function nextAttemptAt(
  n: number,
  now: number,
  window: { startedAt: number; maxAgeMs: number; baseMs: number },
  random: () => number = Math.random,
): number | null {
  const at = now + retryDelay(n, window.baseMs, random);
  return at > window.startedAt + window.maxAgeMs ? null : at;
}
