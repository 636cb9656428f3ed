/**
 * Calendar arithmetic in Beijing time (UTC+8, no daylight saving): the national rules count
 * days and months as people in China see them.
 */
export const BEIJING_OFFSET_MS = 8 * 3_600_000;
const DAY_MS = 86_400_000;

/** Unix ms of the Beijing midnight starting the day that contains `t`. */
export function beijingDayStart(t: number): number {
  return Math.floor((t + BEIJING_OFFSET_MS) / DAY_MS) * DAY_MS - BEIJING_OFFSET_MS;
}

/** `YYYY-MM-DD` of `t` in Beijing. */
export function beijingDate(t: number): string {
  return new Date(t + BEIJING_OFFSET_MS).toISOString().slice(0, 10);
}

/** Unix ms of the first Beijing midnight of the calendar month containing `t`, and its `YYYY-MM`. */
export function beijingMonthStart(t: number): { start: number; month: string } {
  const d = new Date(t + BEIJING_OFFSET_MS);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) - BEIJING_OFFSET_MS;
  return { start, month: d.toISOString().slice(0, 7) };
}

/** Full years between a `YYYY-MM-DD` birth date and the Beijing date of `t`. */
export function ageOn(birthDate: string, t: number): number {
  const [by, bm, bd] = birthDate.split('-').map(Number) as [number, number, number];
  const [y, m, d] = beijingDate(t).split('-').map(Number) as [number, number, number];
  return y - by - (m < bm || (m === bm && d < bd) ? 1 : 0);
}

/**
 * Seconds of each Beijing day covered by the intervals [from, to) that fall in
 * [windowStart, windowEnd): a session crossing midnight is split between the two days, and
 * time covered by several intervals (a player on two devices at once) counts once.
 */
export function secondsPerBeijingDay(intervals: { from: number; to: number }[], windowStart: number, windowEnd: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const iv of union(intervals)) {
    let a = Math.max(iv.from, windowStart);
    const b = Math.min(iv.to, windowEnd);
    while (a < b) {
      const dayEnd = beijingDayStart(a) + DAY_MS;
      const end = Math.min(b, dayEnd);
      const key = beijingDate(a);
      out.set(key, (out.get(key) ?? 0) + (end - a));
      a = end;
    }
  }
  for (const [k, ms] of out) out.set(k, Math.floor(ms / 1000));
  return out;
}

/** The same time as `intervals`, as disjoint intervals in time order. */
function union(intervals: { from: number; to: number }[]): { from: number; to: number }[] {
  const sorted = intervals.filter((iv) => iv.to > iv.from).sort((a, b) => a.from - b.from);
  const out: { from: number; to: number }[] = [];
  for (const iv of sorted) {
    const last = out[out.length - 1];
    if (last && iv.from <= last.to) last.to = Math.max(last.to, iv.to);
    else out.push({ ...iv });
  }
  return out;
}
