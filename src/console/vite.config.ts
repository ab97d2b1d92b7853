import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The reviewer console: a single-page app served by the `web` process at /console. `npm run build`
 * writes it to dist/console; `npm run console:dev` serves it with hot reload, the API proxied to
 * a `web` process on :3000 (`npm run dev`).
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL('../../dist/console', import.meta.url)),
    emptyOutDir: true,
  },
  // Sign-in is taken only from PUBLIC_URL's origin (http://localhost:3000 by default): proxied requests say they come from there.
  server: { proxy: { '/v1': { target: 'http://localhost:3000', headers: { origin: 'http://localhost:3000' } } } },
});
