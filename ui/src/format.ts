/** How the pages write instants and durations: local time to the ms, lateness signed. */

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** `2026-03-29 14:05:09.123` in the browser's zone (the title attribute holds UTC). */
export function instant(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "—";
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
  );
}

/** A duration: `840 µs`, `12 ms`, `3.4 s`, `5 min 2 s`, `2 h 5 min`, `3 d 4 h`. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  const abs = Math.abs(ms);
  const sign = ms < 0 ? "−" : "";
  if (abs === 0) return "0 ms";
  if (abs < 1) return `${sign}${Math.round(abs * 1000)} µs`;
  if (abs < 1000) return `${sign}${abs < 10 ? abs.toFixed(1) : Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(abs < 10_000 ? 2 : 1)} s`;
  if (abs < 3_600_000)
    return `${sign}${Math.floor(abs / 60_000)} min ${Math.round((abs % 60_000) / 1000)} s`;
  if (abs < 86_400_000)
    return `${sign}${Math.floor(abs / 3_600_000)} h ${Math.round((abs % 3_600_000) / 60_000)} min`;
  return `${sign}${Math.floor(abs / 86_400_000)} d ${Math.round((abs % 86_400_000) / 3_600_000)} h`;
}

/** Lateness against run_at: `+12 ms late`, `1.8 s early`, `on time`. */
export function lateness(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (Math.abs(ms) < 0.5) return "on time";
  return ms > 0 ? `+${duration(ms)} late` : `${duration(-ms)} early`;
}

/** `in 3 h 2 min` / `5 s ago`, from now. */
export function relative(iso: string | null | undefined, nowMs = Date.now()): string {
  if (!iso) return "—";
  const delta = Date.parse(iso) - nowMs;
  if (!Number.isFinite(delta)) return "—";
  return delta >= 0 ? `in ${duration(delta)}` : `${duration(-delta)} ago`;
}

export const rate = (perS: number): string =>
  perS === 0 ? "0/s" : perS < 10 ? `${perS.toFixed(2)}/s` : `${Math.round(perS)}/s`;

export const count = (n: number): string => n.toLocaleString("en-US");

export const shortId = (id: string | null | undefined): string => (id ? id.slice(-12) : "—");
