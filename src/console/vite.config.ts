import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const BASE = '/console/';

/**
 * The entry script loads React and the app with a dynamic import once it has sent its first
 * requests (main.tsx). Vite preloads only what the entry imports statically; this links that
 * script and what it imports as `modulepreload` in the page, so that the browser fetches and
 * compiles it beside the entry instead of after it.
 */
function preloadApp(): Plugin {
  return {
    name: 'preload-console-app',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler(_html, { bundle }) {
        const chunks = Object.values(bundle ?? {}).flatMap((output) => (output.type === 'chunk' ? [output] : []));
        const app = chunks.find((chunk) => chunk.isDynamicEntry && chunk.moduleIds.some((id) => id.endsWith('/src/console/render.tsx')));
        if (!app) throw new Error('preload-console-app: no chunk holds src/console/render.tsx');
        const entry = chunks.find((chunk) => chunk.isEntry);
        const files = [app.fileName, ...app.imports.filter((file) => file !== entry?.fileName)];
        return files.map((file) => ({
          tag: 'link',
          attrs: { rel: 'modulepreload', crossorigin: true, href: `${BASE}${file}` },
          injectTo: 'head',
        }));
      },
    },
  };
}

/**
 * The reviewer console: a single-page app served by the `web` process at /console. `npm run build`
 * writes it to dist/console; `npm run console:dev` serves it with hot reload, the API proxied to
 * a `web` process on :3000 (`npm run dev`).
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: BASE,
  plugins: [react(), preloadApp()],
  build: {
    outDir: fileURLToPath(new URL('../../dist/console', import.meta.url)),
    emptyOutDir: true,
  },
  // Sign-in is taken only from PUBLIC_URL's origin (http://localhost:3000 by default): proxied requests say they come from there.
  server: { proxy: { '/v1': { target: 'http://localhost:3000', headers: { origin: 'http://localhost:3000' } } } },
});
