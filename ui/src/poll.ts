/**
 * `usePoll`: loads now, then again every `intervalMs` while the tab is
 * visible (a hidden tab costs the server nothing), and at once when it
 * becomes visible again or `deps` change. Keeps the last good value while a
 * later load fails, and says so.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "./api.js";

export interface Polled<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

export function usePoll<T>(
  load: () => Promise<T>,
  intervalMs: number | null,
  deps: readonly unknown[],
): Polled<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  const run = useCallback(async () => {
    const mine = ++generation.current;
    try {
      const value = await loadRef.current();
      if (mine !== generation.current) return;
      setData(value);
      setError(null);
    } catch (e) {
      if (mine !== generation.current) return;
      setError(e instanceof ApiError ? e : new ApiError(0, "error", String(e)));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, []);

  useEffect(() => {
    setLoading(true);
    setData(null);
    void run();
    if (intervalMs === null) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") void run();
    }, intervalMs);
    const onVisible = () => document.visibilityState === "visible" && void run();
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", onVisible);
      generation.current++;
    };
  }, [intervalMs, ...deps]);

  return { data, error, loading, reload: () => void run() };
}
