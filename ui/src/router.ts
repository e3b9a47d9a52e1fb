/**
 * A path router for /ui/... with the History API: the server answers any
 * /ui path with index.html, so a reload or a shared link lands on the same
 * page. `useRoute` re-renders on navigation; `navigate` pushes a new entry.
 */
import { useEffect, useState } from "preact/hooks";

export const BASE = "/ui";
const CHANGE = "chronofence:navigate";

export const currentPath = (): string => {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : "/";
  return path === "" ? "/" : path;
};

export function navigate(path: string, replace = false): void {
  const url = `${BASE}${path}`;
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.dispatchEvent(new Event(CHANGE));
}

export function useRoute(): { path: string; search: URLSearchParams } {
  const [state, setState] = useState(() => ({
    path: currentPath(),
    search: new URLSearchParams(location.search),
  }));
  useEffect(() => {
    const update = () =>
      setState({ path: currentPath(), search: new URLSearchParams(location.search) });
    window.addEventListener("popstate", update);
    window.addEventListener(CHANGE, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(CHANGE, update);
    };
  }, []);
  return state;
}

/** `pattern` like "/tasks/:id": the parameters, or null when the path does not match. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split("/");
  const b = path.replace(/\/$/, "").split("/");
  if (a.length !== b.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    const part = a[i]!;
    if (part.startsWith(":")) params[part.slice(1)] = decodeURIComponent(b[i]!);
    else if (part !== b[i]) return null;
  }
  return params;
}

/** Click handler for links that stay in the app (modifier clicks open a new tab as usual). */
export function linkTo(path: string) {
  return {
    href: `${BASE}${path}`,
    onClick: (event: MouseEvent) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
      event.preventDefault();
      navigate(path);
    },
  };
}
