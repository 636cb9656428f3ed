import QRCode from 'qrcode';

/**
 * A QR code of `text` as an SVG document, drawn here (the `qrcode` package) so the checkout
 * page loads nothing from another host. Error correction M and the standard quiet zone of four
 * modules: what phone cameras read reliably off a screen.
 */
export function qrSvg(text: string): Promise<string> {
  return QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 4 });
}
