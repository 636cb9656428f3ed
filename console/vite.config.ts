import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The console is served by the service at /console/ from dist/console (src/http/console.ts).
// JSX goes through esbuild's automatic runtime: no React plugin needed (no fast refresh).
const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/console/',
  publicDir: false,
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    sourcemap: true,
    target: 'es2022',
    chunkSizeWarningLimit: 1024,
  },
  server: {
    // `npx vite --config console/vite.config.ts` during development: the API is the service's.
    proxy: { '/admin': process.env.CONSOLE_API ?? 'http://127.0.0.1:8080' },
  },
});
