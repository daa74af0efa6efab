import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Built with relative asset URLs: the service tells the page where it lives (<base href>) when it serves it, so
// one build works at any web.base_path and behind any server.root_url prefix. `npx vite web` serves the sources
// at /admin/ and forwards the API to a running service (CONSOLE_URL, default http://localhost:8080).
const target = process.env.CONSOLE_URL ?? 'http://localhost:8080';

export default defineConfig(({ command }) => ({
  root: import.meta.dirname,
  base: command === 'serve' ? '/admin/' : './',
  plugins: [react()],
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    // The service precompresses and reports sizes itself (tools/build-web.ts).
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1024,
  },
  server: {
    proxy: Object.fromEntries(['/api', '/trpc', '/healthz'].map((path) => [path, { target, changeOrigin: true }])),
  },
}));
