import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

// The dashboard is served by the service under /app/; in `vite` dev mode every other path goes to a
// running service (MAILWRIGHT_URL) so the app talks to the real API, cookies included.
export default defineConfig({
  root,
  base: '/app/',
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    reportCompressedSize: true,
  },
  server: {
    proxy: {
      '^/(?!app/|@|src/|node_modules/).*': {
        target: process.env.MAILWRIGHT_URL ?? 'http://127.0.0.1:3000',
        changeOrigin: false,
      },
    },
  },
});
