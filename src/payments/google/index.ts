import { Errors } from '../../errors.js';
import type { PaymentProvider, PaymentStart } from '../provider.js';
import { GOOGLE_SECRET_FIELDS, GoogleSettings } from './settings.js';

/**
 * The `google` channel (payments.md 3-5): its settings are kept; paying through Google Play
 * is not offered by this build yet, so a game with it enabled is told so (503).
 */
export class GoogleProvider implements PaymentProvider {
  readonly name = 'google';
  readonly sandbox = false;
  readonly settingsBody = GoogleSettings;
  readonly secretFields = GOOGLE_SECRET_FIELDS;
  readonly hasCallbacks = true;

  async start(): Promise<PaymentStart> {
    throw Errors.serviceUnavailable('Google Play payments are not available in this build');
  }
}
