/**
 * The dashboard's build (`npm run build:ui`): Preact with JSX through Vite's
 * own transformer, one hashed JS and CSS file under dist/ui/assets, served
 * by the API role at /ui (node/src/adapters/http/ui-routes.ts). No CDN:
 * everything the page loads is in that folder.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/ui/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/ui", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    reportCompressedSize: true,
    chunkSizeWarningLimit: 200,
  },
  logLevel: "warn",
});
