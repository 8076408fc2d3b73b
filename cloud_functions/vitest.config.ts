import { defineConfig } from "vitest/config";

export default defineConfig({
  // Vite's cache beside the root node_modules: nothing may appear in this folder that
  // `convex deploy` would walk.
  cacheDir: "../node_modules/.vite",
  test: {
    // convex-test runs the functions in the edge runtime, like Convex's own isolate.
    environment: "edge-runtime",
    server: { deps: { inline: ["convex-test"] } },
  },
});
