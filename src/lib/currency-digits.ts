/**
 * How many decimals a currency's minor unit has (ISO 4217), which is what an `amount` in minor
 * units is counted in (PROTOCOL 5). Not Intl's `maximumFractionDigits`: that is CLDR's display
 * habit, 0 for HUF, IDR, IQD and others whose ISO minor unit is 2 or 3, so 123456 HUF would
 * show as 123,456 instead of 1,234.56. Pure (no Node.js API): the console bundles it too.
 */
const DIGITS: Record<string, number> = {
  // ISO 4217 minor unit 0.
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0,
  UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  // 3.
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  // 4.
  CLF: 4, UYW: 4,
  // No minor unit ("N.A."): precious metals, SDR, testing and the like, counted whole.
  XAG: 0, XAU: 0, XBA: 0, XBB: 0, XBC: 0, XBD: 0, XDR: 0, XPD: 0, XPT: 0, XSU: 0, XTS: 0, XUA: 0, XXX: 0,
};

/** Decimals of the currency's minor unit: 2 unless ISO 4217 says otherwise. */
export function minorUnitDigits(currency: string): number {
  return DIGITS[currency] ?? 2;
}
