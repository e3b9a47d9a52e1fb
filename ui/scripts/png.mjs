/**
 * A lossless PNG shrinker for the dashboard's screenshots (no optimiser is
 * installed here, and a dependency for this is not worth it): Chromium
 * writes 8-bit RGBA with fast compression; a screenshot is opaque, so the
 * alpha channel goes (RGB), each row gets the filter with the smallest sum
 * of absolute values (the heuristic of libpng and optipng), and the image
 * data is deflated at level 9. Other PNGs come back unchanged.
 */
import { deflateSync, inflateSync } from "node:zlib";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunks(png) {
  const found = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    found.push({
      type: png.toString("latin1", at + 4, at + 8),
      data: png.subarray(at + 8, at + 8 + length),
    });
    at += 12 + length;
  }
  return found;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

const paeth = (a, b, c) => {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
};

/** The five filters' predictor of byte i of a row (bpp bytes a pixel). */
const PREDICTORS = [
  () => 0,
  (row, _prev, i, bpp) => (i >= bpp ? row[i - bpp] : 0),
  (_row, prev, i) => prev[i],
  (row, prev, i, bpp) => ((i >= bpp ? row[i - bpp] : 0) + prev[i]) >> 1,
  (row, prev, i, bpp) => paeth(i >= bpp ? row[i - bpp] : 0, prev[i], i >= bpp ? prev[i - bpp] : 0),
];

function unfilter(raw, width, height, bpp) {
  const stride = width * bpp;
  const rows = [];
  let prev = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const row = Uint8Array.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; i++)
      row[i] = (row[i] + PREDICTORS[filter](row, prev, i, bpp)) & 0xff;
    rows.push(row);
    prev = row;
  }
  return rows;
}

function refilter(rows, bpp) {
  const stride = rows[0].length;
  const out = Buffer.alloc(rows.length * (stride + 1));
  let prev = new Uint8Array(stride);
  rows.forEach((row, y) => {
    let best = null;
    let bestCost = Infinity;
    for (let filter = 0; filter < 5; filter++) {
      const line = new Uint8Array(stride);
      let cost = 0;
      for (let i = 0; i < stride; i++) {
        line[i] = (row[i] - PREDICTORS[filter](row, prev, i, bpp)) & 0xff;
        cost += line[i] < 128 ? line[i] : 256 - line[i];
      }
      if (cost < bestCost) [best, bestCost] = [{ filter, line }, cost];
    }
    out[y * (stride + 1)] = best.filter;
    out.set(best.line, y * (stride + 1) + 1);
    prev = row;
  });
  return out;
}

export function recompressPng(png) {
  if (!png.subarray(0, 8).equals(SIGNATURE)) return png;
  const all = chunks(png);
  const header = all.find((c) => c.type === "IHDR").data;
  const width = header.readUInt32BE(0);
  const height = header.readUInt32BE(4);
  const [depth, colour, , , interlace] = header.subarray(8, 13);
  if (depth !== 8 || interlace !== 0 || (colour !== 6 && colour !== 2)) return png;
  const bpp = colour === 6 ? 4 : 3;
  const raw = inflateSync(Buffer.concat(all.filter((c) => c.type === "IDAT").map((c) => c.data)));
  let rows = unfilter(raw, width, height, bpp);
  const opaque = bpp === 4 && rows.every((row) => row.every((v, i) => i % 4 !== 3 || v === 255));
  if (opaque) rows = rows.map((row) => row.filter((_v, i) => i % 4 !== 3));
  const outBpp = opaque ? 3 : bpp;
  const ihdr = Buffer.from(header);
  ihdr[9] = outBpp === 3 ? 2 : 6;
  const idat = deflateSync(refilter(rows, outBpp), { level: 9, memLevel: 9 });
  const smaller = Buffer.concat([
    SIGNATURE,
    chunk("IHDR", ihdr),
    chunk("IDAT", idat),
    chunk("IEND", Buffer.alloc(0)),
  ]);
  return smaller.length < png.length ? smaller : png;
}
