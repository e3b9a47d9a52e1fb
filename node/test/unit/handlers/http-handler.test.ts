/**
 * The built-in http handler against real local HTTP servers: loopback is
 * refused unless the operator's allow-list permits it, names are checked
 * after resolution (every address; `localhost` too) and the checked address
 * is the one connected to, redirects are not followed, the answer is capped,
 * and the IPv4 ranges are refused in their IPv6 spellings as well.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_RESPONSE_BYTES, registerBuiltins } from "../../../src/adapters/handlers/builtin.js";
import { EgressPolicy } from "../../../src/adapters/handlers/egress-policy.js";
import type { Resolver } from "../../../src/adapters/handlers/safe-fetch.js";
import { HandlerMap } from "../../../src/app/execution/handler-registry.js";
import type { Handler, HandlerContext } from "../../../src/ports/handler.js";

interface Seen {
  url: string;
  host: string | undefined;
}

/** A server that records what reaches it and answers as `answer` says. */
async function server(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const seen: Seen[] = [];
  const s = http.createServer((req, res) => {
    seen.push({ url: req.url ?? "", host: req.headers.host });
    req.resume();
    req.on("end", () => answer(req, res));
  });
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as AddressInfo).port;
  return { seen, port, close: () => new Promise((resolve) => s.close(resolve)) };
}

let target: Awaited<ReturnType<typeof server>>;
let redirector: Awaited<ReturnType<typeof server>>;

beforeAll(async () => {
  target = await server((req, res) => {
    if (req.url === "/big") return res.end("x".repeat(4 * MAX_RESPONSE_BYTES));
    res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
  });
  redirector = await server((_req, res) =>
    res.writeHead(302, { location: `http://127.0.0.1:${target.port}/stolen` }).end(),
  );
});

afterAll(async () => {
  await target.close();
  await redirector.close();
});

function httpHandler(allow: string, resolve?: Resolver): Handler {
  const options = { egress: new EgressPolicy(allow), ...(resolve && { resolve }) };
  return registerBuiltins(new HandlerMap(), options).get("http")!;
}

const ctx = (): HandlerContext => ({
  taskId: "0190a000-0000-7000-8000-000000000001",
  tenantId: "0190a000-0000-7000-8000-000000000002",
  type: "http",
  attempt: 1,
  maxAttempts: 3,
  fencingToken: "7",
  idempotencyKey: null,
  runAtMs: 0,
  timeoutMs: 5000,
  parentResults: null,
  signal: new AbortController().signal,
});

describe("http handler egress", () => {
  it("refuses loopback without an allow-list, before connecting", async () => {
    const before = target.seen.length;
    const run = httpHandler("")({ url: `http://127.0.0.1:${target.port}/x` }, ctx());
    await expect(run).rejects.toMatchObject({ code: "egress_refused", retryable: false });
    expect(target.seen.length).toBe(before);
  });

  it("reaches loopback when the allow-list permits it (a CIDR, or exactly host:port)", async () => {
    const url = `http://127.0.0.1:${target.port}/ok`;
    expect(await httpHandler("127.0.0.0/8")({ url }, ctx())).toEqual({
      status: 200,
      body: { ok: true },
    });
    expect(await httpHandler(`127.0.0.1:${target.port}`)({ url }, ctx())).toMatchObject({
      status: 200,
    });
    const otherPort = httpHandler(`127.0.0.1:${target.port + 1}`)({ url }, ctx());
    await expect(otherPort).rejects.toMatchObject({ code: "egress_refused" });
  });

  it("refuses a name that resolves to loopback: localhost", async () => {
    const run = httpHandler("")({ url: `http://localhost:${target.port}/x` }, ctx());
    await expect(run).rejects.toMatchObject({ code: "egress_refused" });
  });

  it("refuses a name if any of its addresses is denied, and connects to the address it checked", async () => {
    const mixed: Resolver = async () => [
      { address: "93.184.216.34", family: 4 },
      { address: "127.0.0.1", family: 4 },
    ];
    await expect(
      httpHandler("", mixed)({ url: "http://mixed.test/x" }, ctx()),
    ).rejects.toMatchObject({ code: "egress_refused" });
    // A rebinding name answers differently each time; it is asked once, and that answer is used.
    let lookups = 0;
    const rebinding: Resolver = async () =>
      lookups++ === 0
        ? [{ address: "127.0.0.1", family: 4 }]
        : [{ address: "10.0.0.1", family: 4 }];
    const allowed = httpHandler(`rebind.test:${target.port}`, rebinding);
    const result = await allowed({ url: `http://rebind.test:${target.port}/rebind` }, ctx());
    expect(result).toMatchObject({ status: 200 });
    expect(lookups).toBe(1);
    expect(target.seen.at(-1)).toEqual({ url: "/rebind", host: `rebind.test:${target.port}` });
  });

  it("does not follow a redirect, even to an allowed address", async () => {
    const before = target.seen.length;
    const run = httpHandler("127.0.0.1/32")({ url: `http://127.0.0.1:${redirector.port}/` }, ctx());
    await expect(run).rejects.toMatchObject({ code: "http_302", retryable: false });
    expect(target.seen.length).toBe(before);
  });

  it("reads at most MAX_RESPONSE_BYTES of the answer", async () => {
    const result = (await httpHandler("127.0.0.1/32")(
      { url: `http://127.0.0.1:${target.port}/big` },
      ctx(),
    )) as { body: string };
    expect(result.body.length).toBe(MAX_RESPONSE_BYTES);
  });

  it("keeps the connection's own headers: a payload cannot set Host or Transfer-Encoding", async () => {
    const headers = { host: "evil.test", "transfer-encoding": "chunked", "x-ok": "1" };
    const url = `http://127.0.0.1:${target.port}/headers`;
    expect(await httpHandler("127.0.0.1/32")({ url, headers }, ctx())).toMatchObject({
      status: 200,
    });
    expect(target.seen.at(-1)?.host).toBe(`127.0.0.1:${target.port}`);
  });
});

describe("EgressPolicy", () => {
  const policy = new EgressPolicy("");
  it.each([
    "127.0.0.1",
    "127.1.2.3",
    "0.0.0.0",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "100.64.0.1",
    "100.100.100.200",
    "169.254.169.254",
    "224.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "fe80::1",
    "fd00:ec2::254",
    "fc00::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:a9fe:a9fe",
    "::127.0.0.1",
    "64:ff9b::a9fe:a9fe",
    "2002:a9fe:a9fe::1",
  ])("denies %s", (address) => {
    expect(policy.permits("h", 80, address)).toBe(false);
  });

  it.each([
    "93.184.216.34",
    "8.8.8.8",
    "172.32.0.1",
    "100.128.0.1",
    "2606:4700::1111",
    "::ffff:8.8.8.8",
  ])("permits %s", (address) => {
    expect(policy.permits("h", 80, address)).toBe(true);
  });

  it("refuses a malformed allow-list entry at start", () => {
    expect(() => new EgressPolicy("10.0.0.0/33")).toThrow(/CF_HTTP_HANDLER_ALLOW/);
    expect(() => new EgressPolicy("not a host")).toThrow(/CF_HTTP_HANDLER_ALLOW/);
  });
});
