import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { minorUnitDigits } from '../../src/lib/currency-digits';
import { ApiError } from './api';
import { Link } from './router';

// ---------------------------------------------------------------- formatting

/** Unix ms as UTC "YYYY-MM-DD HH:MM:SS": operators compare times across logs. */
export function time(ms: number | null | undefined): string {
  if (typeof ms !== 'number') return '—';
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** Integer minor units as "6.00 CNY" (decimals of the ISO 4217 minor unit). */
export function money(minor: number | undefined, currency: string | undefined): string {
  if (typeof minor !== 'number' || !currency) return '—';
  const d = minorUnitDigits(currency);
  return `${(minor / 10 ** d).toFixed(d)} ${currency}`;
}

// ---------------------------------------------------------------- data loading

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload: () => void;
  set: (v: T) => void;
}

/** Runs `load` when `deps` change; keeps the last result while reloading. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    load()
      .then((v) => live && (setData(v), setError(undefined)))
      .catch((e: Error) => live && setError(e))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  return { data, error, loading, reload: useCallback(() => setTick((t) => t + 1), []), set: setData };
}

/** Runs an action, tracking busy state and the error it throws. */
export function useAction(): { busy: boolean; error: Error | undefined; run: <T>(f: () => Promise<T>) => Promise<T | undefined>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const run = useCallback(async <T,>(f: () => Promise<T>) => {
    setBusy(true);
    setError(undefined);
    try {
      return await f();
    } catch (e) {
      setError(e as Error);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}

// ---------------------------------------------------------------- components

export function ErrorBox({ error }: { error: Error | undefined }) {
  if (!error) return null;
  const code = error instanceof ApiError ? `${error.status} ${error.code}: ` : '';
  return (
    <div className="error" role="alert">
      {code}
      {error.message}
    </div>
  );
}

export function Card(props: { title: ReactNode; actions?: ReactNode; children: ReactNode; id?: string }) {
  return (
    <section className="card" id={props.id}>
      <header>
        <h2>{props.title}</h2>
        {props.actions && <div className="actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

export function Json({ value, label = 'Raw JSON', open = false }: { value: unknown; label?: string; open?: boolean }) {
  return (
    <details className="json" open={open}>
      <summary>{label}</summary>
      <pre>{JSON.stringify(value, null, 2)}</pre>
    </details>
  );
}

export function Switch(props: { checked: boolean; onChange: (v: boolean) => void; label: string; disabled?: boolean; testId?: string }) {
  return (
    <label className="switch">
      <input
        type="checkbox"
        role="switch"
        checked={props.checked}
        disabled={props.disabled}
        aria-label={props.label}
        data-testid={props.testId}
        onChange={(e) => props.onChange(e.target.checked)}
      />
      <span className="slider" aria-hidden="true" />
      <span>{props.label}</span>
    </label>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${status}`}>{status}</span>;
}

/** A button that asks again before acting: the first click shows Confirm / Cancel. */
export function ConfirmButton(props: { label: string; question: string; onConfirm: () => void; danger?: boolean; disabled?: boolean }) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button className={props.danger ? 'danger' : ''} disabled={props.disabled} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        className="danger"
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        Confirm
      </button>
      <button onClick={() => setAsking(false)}>Cancel</button>
    </span>
  );
}

/** A new secret, shown once: it is not stored anywhere and the API never returns it again. */
export function SecretOnce({ secret, onDone }: { secret: { key_id: string; secret_key: string }; onDone: () => void }) {
  return (
    <ShownOnce title={`New secret for key ${secret.key_id}.`} value={secret.secret_key} onDone={onDone} testId="secret-once" valueTestId="secret-value" />
  );
}

/** A value shown only this once (a secret, an API key, an invitation link), with a Copy button. */
export function ShownOnce(props: { title: string; value: string; onDone: () => void; testId: string; valueTestId: string; note?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return (
    <div className="secret" role="status" data-testid={props.testId}>
      <p>
        <strong>{props.title}</strong> {props.note ?? 'Copy it now: it is shown only this once.'}
      </p>
      <code data-testid={props.valueTestId}>{props.value}</code>
      <div className="row">
        <button onClick={copy}>{copied ? 'Copied' : 'Copy'}</button>
        <button onClick={props.onDone}>I have stored it</button>
      </div>
    </div>
  );
}

export function Field(props: { label: string; children: ReactNode; hint?: string }) {
  return (
    <label className="field">
      <span className="label">{props.label}</span>
      {props.children}
      {props.hint && <span className="hint">{props.hint}</span>}
    </label>
  );
}

/** What a detail page shows until its data is there: "Loading…", or the error and a way back. */
export function Unloaded(props: { loaded: { error: Error | undefined }; title: string; back: { to: string; label: string } }) {
  if (!props.loaded.error) return <p className="muted">Loading…</p>;
  return (
    <>
      <h1>{props.title}</h1>
      <ErrorBox error={props.loaded.error} />
      <Link to={props.back.to}>{props.back.label}</Link>
    </>
  );
}
