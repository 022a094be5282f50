// Vite build of the svcnet ui page: src/ui/page → dist/ui (index.html + assets/), next to
// tsc's dist/ui/*.js of the server, so the folder is not emptied. Preact's JSX runtime; no
// CDN: every byte the page loads is in assets/.
import { defineConfig } from 'vite';

const root = new URL('.', import.meta.url).pathname;

export const config = defineConfig({
  root,
  base: '/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: new URL('../../../dist/ui/', import.meta.url).pathname,
    emptyOutDir: false,
    assetsDir: 'assets',
    chunkSizeWarningLimit: 2000,
  },
});

// Vite reads the config module's default export.
// eslint-disable-next-line no-restricted-syntax
export default config;
