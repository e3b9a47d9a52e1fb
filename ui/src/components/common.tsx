/** Small pieces every page uses: status badges, errors, JSON, a confirm-free action button. */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { ApiError } from "../api.js";

export function Status({ status }: { status: string | null | undefined }) {
  const s = status ?? "—";
  return <span class={`status status-${s.toLowerCase()}`}>{s}</span>;
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const text =
    error instanceof ApiError
      ? `${error.status === 0 ? "" : `${error.status} `}${error.code}: ${error.message}`
      : String(error);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

export function Json({ value }: { value: unknown }) {
  if (value === undefined) return <span class="muted">—</span>;
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

export function Card(props: {
  label: string;
  value: ComponentChildren;
  hint?: string;
  id?: string;
}) {
  return (
    <div class="card" data-card={props.id ?? props.label}>
      <div class="card-label">{props.label}</div>
      <div class="card-value">{props.value}</div>
      {props.hint && <div class="card-hint">{props.hint}</div>}
    </div>
  );
}

/** A button that runs `action`, shows it is busy, and shows its error under itself. */
export function Action(props: {
  label: string;
  action: () => Promise<unknown>;
  disabled?: boolean;
  kind?: "danger" | "primary";
  name?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  return (
    <span class="action">
      <button
        type="button"
        class={props.kind ?? ""}
        data-action={props.name ?? props.label}
        disabled={busy || props.disabled}
        onClick={async () => {
          setBusy(true);
          setError(null);
          try {
            await props.action();
          } catch (e) {
            setError(e);
          } finally {
            setBusy(false);
          }
        }}
      >
        {busy ? "…" : props.label}
      </button>
      <ErrorBox error={error} />
    </span>
  );
}

export const Loading = () => <p class="muted">Loading…</p>;
