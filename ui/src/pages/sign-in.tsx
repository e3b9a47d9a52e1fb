/** Sign-in with a tenant's API key: checked against the API before it is kept (sessionStorage). */
import { useState } from "preact/hooks";
import { ApiError, request, session } from "../api.js";

export function SignIn(props: { refused: boolean; onSignedIn: () => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(
    props.refused ? "Your key was refused (revoked or unknown). Sign in again." : null,
  );
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await request("GET", "/v1/stats", { token: key.trim() });
      session.setKey(key.trim());
      props.onSignedIn();
    } catch (e) {
      setError(
        e instanceof ApiError && e.status === 401
          ? "This key was refused: no tenant has it (or it was revoked)."
          : `Could not check the key: ${(e as Error).message}`,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="sign-in">
      <form onSubmit={submit}>
        <h1>Chronofence</h1>
        <p class="muted">
          Sign in with a tenant's API key (<code>chronofence tenants create</code> prints one). It
          is kept in this tab only.
        </p>
        <label>
          API key
          <input
            name="api-key"
            type="password"
            autocomplete="off"
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
            placeholder="cfk_…"
            required
          />
        </label>
        <button type="submit" class="primary" disabled={busy || key.trim() === ""}>
          {busy ? "Checking…" : "Sign in"}
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </div>
  );
}
