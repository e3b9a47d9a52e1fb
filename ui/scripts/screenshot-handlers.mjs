/**
 * Handlers of the dashboard's screenshot run (ui/scripts/screenshots.mjs),
 * loaded by `chronofence dev --handlers`: the kinds of work a scheduler
 * really runs, each taking a little time, and a webhook whose endpoint is
 * down, so that its tasks retry and die (the Dead letters page).
 */
const pause = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

const busy = (ms) => async (payload, ctx) => {
  await pause(ms + (ctx.attempt % 3) * 7, ctx.signal);
  return { ok: true, ...payload };
};

export const handlers = {
  "email.send": async (payload, ctx) => {
    await pause(35, ctx.signal);
    return { message_id: `msg-${ctx.taskId.slice(-8)}`, to: payload?.to };
  },
  "invoice.render": async (payload, ctx) => {
    await pause(120, ctx.signal);
    return { pages: 2, invoice: payload?.invoice };
  },
  "report.build": busy(400),
  "etl.step": async (payload, ctx) => {
    await pause(payload?.ms ?? 200, ctx.signal);
    return { step: payload?.step, rows: 1200 };
  },
  "webhook.deliver": async (payload) => {
    throw Object.assign(
      new Error(`POST ${payload?.url ?? "https://hooks.example.com"} answered 502 Bad Gateway`),
      { code: "http_502" },
    );
  },
};
