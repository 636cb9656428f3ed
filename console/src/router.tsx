import { useSyncExternalStore, type MouseEvent, type ReactNode } from 'react';

/** A tiny history router: paths under /console/ are client routes (the server falls back to index.html). */
export const BASE = '/console';
const CHANGE = 'console:navigate';

function subscribe(cb: () => void): () => void {
  window.addEventListener('popstate', cb);
  window.addEventListener(CHANGE, cb);
  return () => {
    window.removeEventListener('popstate', cb);
    window.removeEventListener(CHANGE, cb);
  };
}

const snapshot = () => window.location.pathname + window.location.search;

/** The current route: the path below /console (always starting with "/") and its query. */
export function useRoute(): { path: string; query: URLSearchParams } {
  const loc = useSyncExternalStore(subscribe, snapshot);
  const [p, q = ''] = loc.split('?') as [string, string?];
  const path = p.startsWith(BASE) ? p.slice(BASE.length) || '/' : '/';
  return { path, query: new URLSearchParams(q) };
}

export function navigate(to: string, replace = false): void {
  const url = BASE + to;
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  window.dispatchEvent(new Event(CHANGE));
}

export function Link(props: { to: string; children: ReactNode; className?: string }) {
  const onClick = (e: MouseEvent) => {
    if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    navigate(props.to);
  };
  return (
    <a href={BASE + props.to} onClick={onClick} className={props.className}>
      {props.children}
    </a>
  );
}

/** Matches "/orders/:id" against a path; returns the decoded parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const a = path.replace(/\/$/, '').split('/');
  if (p.length !== a.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const seg = p[i] as string;
    const val = a[i] as string;
    if (seg.startsWith(':')) out[seg.slice(1)] = decodeURIComponent(val);
    else if (seg !== val) return null;
  }
  return out;
}
