import { useState, type ReactNode } from 'react';
import type { Channel } from './api';
import { Field, Switch } from './ui';
import './payments.css';

/**
 * The settings form of the `wechat` and `alipay` channels (payments.md 2), one field per
 * setting. Secrets are write-only: the API shows them as "***", so the form says whether each
 * is set and never fills it in. PUT replaces the whole channel, so saving asks for every
 * secret again; the form forgets them once saved.
 */
export type ProviderChannelName = 'wechat' | 'alipay';
export const PROVIDER_CHANNELS: ProviderChannelName[] = ['wechat', 'alipay'];
export const isProviderChannel = (c: string): c is ProviderChannelName => (PROVIDER_CHANNELS as string[]).includes(c);

interface SettingSpec {
  name: string;
  label: string;
  hint: string;
  /** Write-only: sealed at rest, "***" when read back. */
  secret?: boolean;
  /** A PEM key: a text area that can also be loaded from a file. */
  pem?: boolean;
}

const SETTINGS: Record<ProviderChannelName, SettingSpec[]> = {
  wechat: [
    { name: 'mchid', label: 'Merchant id (mchid)', hint: 'WeChat Pay merchant platform, account centre: 商户号' },
    { name: 'appid', label: 'AppID', hint: 'the website, official account or mobile app bound to the merchant' },
    { name: 'merchant_serial_no', label: 'API certificate serial number', hint: 'API security, merchant API certificate' },
    { name: 'merchant_private_key', label: 'Merchant API private key', hint: 'apiclient_key.pem', secret: true, pem: true },
    { name: 'api_v3_key', label: 'APIv3 key', hint: '32 characters, set under API security', secret: true },
    { name: 'wechatpay_public_key_id', label: 'WeChat Pay public key id', hint: 'PUB_KEY_ID_…, under WeChat Pay public key' },
    { name: 'wechatpay_public_key', label: 'WeChat Pay public key', hint: 'pub_key.pem: verifies WeChat Pay’s answers and callbacks', pem: true },
  ],
  alipay: [
    { name: 'app_id', label: 'Alipay APPID', hint: 'the application on open.alipay.com' },
    { name: 'app_private_key', label: 'Application private key', hint: 'RSA2 (2048 bits or more), PEM: signs our requests', secret: true, pem: true },
    { name: 'alipay_public_key', label: 'Alipay public key', hint: '支付宝公钥 of the application, PEM: verifies Alipay’s answers and notifies', pem: true },
  ],
};

export const PROVIDER_LABELS: Record<ProviderChannelName, string> = { wechat: 'WeChat Pay', alipay: 'Alipay' };

const MASK = '***';

function initial(channel: ProviderChannelName, current: Channel | undefined): Record<string, string> {
  const values: Record<string, string> = {};
  for (const s of SETTINGS[channel]) {
    const v = current?.[s.name];
    values[s.name] = !s.secret && typeof v === 'string' ? v : '';
  }
  return values;
}

export interface ProviderForm {
  /** The form's fields; null when `channel` is not wechat or alipay. */
  fields: ReactNode;
  /** The PUT body; null when `channel` is not wechat or alipay. */
  body: () => Record<string, unknown> | null;
  /** Forgets what was typed (the secrets above all), back to the channel as stored. */
  reset: () => void;
}

/** The wechat/alipay part of the channels card: `channel` is the one selected there. */
export function useProviderForm(gameId: string, channel: string, current: Channel | undefined): ProviderForm {
  const key = `${gameId}/${channel}/${current?.updated_at ?? 'new'}`;
  const [state, setState] = useState<{ key: string; enabled: boolean; values: Record<string, string> }>({ key: '', enabled: true, values: {} });
  if (!isProviderChannel(channel)) return { fields: null, body: () => null, reset: () => {} };
  // A newly selected channel, or the stored one changed: start from what is stored.
  const s = state.key === key ? state : { key, enabled: current?.enabled ?? true, values: initial(channel, current) };
  if (s !== state) setState(s);
  const set = (name: string, value: string) => setState({ ...s, values: { ...s.values, [name]: value } });
  const body = () => {
    const out: Record<string, unknown> = { enabled: s.enabled };
    for (const spec of SETTINGS[channel]) out[spec.name] = spec.pem ? s.values[spec.name] ?? '' : (s.values[spec.name] ?? '').trim();
    return out;
  };
  const fields = (
    <>
      <p className="muted small wide-cell" data-testid="provider-callback">
        Callback URL to register with {PROVIDER_LABELS[channel]}:{' '}
        {current?.callback_url ? <code>{current.callback_url}</code> : 'shown once the channel is saved'}
        {channel === 'wechat' ? ' (sent as notify_url with every payment and refund)' : ' (the application’s notify address, 应用网关)'}
      </p>
      {SETTINGS[channel].map((spec) => (
        <SettingField key={spec.name} spec={spec} value={s.values[spec.name] ?? ''} stored={current?.[spec.name]} onChange={(v) => set(spec.name, v)} />
      ))}
      <Switch label="Enabled" checked={s.enabled} onChange={(v) => setState({ ...s, enabled: v })} />
    </>
  );
  return { fields, body, reset: () => setState({ key: '', enabled: true, values: {} }) };
}

function SettingField({ spec, value, stored, onChange }: { spec: SettingSpec; value: string; stored: unknown; onChange: (v: string) => void }) {
  const secretState = spec.secret ? (stored === MASK ? 'set' : 'not set') : null;
  const hint = secretState ? `${spec.hint}; write-only, ${secretState}: enter it to save` : spec.hint;
  const load = async (file: File | undefined) => {
    if (file) onChange(await file.text());
  };
  return (
    <div className={spec.pem ? 'wide-cell' : undefined}>
      <Field label={spec.label} hint={hint}>
        {spec.pem ? (
          <textarea name={spec.name} rows={4} value={value} spellCheck={false} autoComplete="off" placeholder="-----BEGIN …-----" onChange={(e) => onChange(e.target.value)} />
        ) : (
          <input name={spec.name} type={spec.secret ? 'password' : 'text'} autoComplete={spec.secret ? 'new-password' : 'off'} value={value} onChange={(e) => onChange(e.target.value)} />
        )}
      </Field>
      {secretState && (
        <span className={`badge badge-secret-${secretState.replace(' ', '-')}`} data-testid={`secret-${spec.name}`}>
          {secretState}
        </span>
      )}
      {spec.pem && <input type="file" aria-label={`${spec.label} from a file`} accept=".pem,.txt,text/plain" onChange={(e) => void load(e.target.files?.[0])} />}
    </div>
  );
}
