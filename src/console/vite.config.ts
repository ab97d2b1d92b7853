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
  server: { proxy: { '/v1': 'http://localhost:3000' } },
});
