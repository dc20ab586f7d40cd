import { resolve } from 'node:path'
import { defineConfig } from 'electron-vite'
import type { Plugin } from 'vite'
import react from '@vitejs/plugin-react'

const root = import.meta.dirname

// Native N-API addons of the Holepunch stack (and their wrappers). They are
// transitive dependencies, so name them explicitly: they must never be bundled.
const nativeAddons = [
  'sodium-native', 'sodium-universal', 'udx-native', 'rocksdb-native', 'quickbit-native',
  'simdle-native', 'fs-native-extensions', 'require-addon', 'hypercore-storage'
]

// The renderer's index.html carries a strict CSP. The dev server needs an inline
// script (React Fast Refresh preamble), injected <style> tags and a WebSocket (HMR):
// relax it in dev only. The build keeps the strict policy.
function devCsp(): Plugin {
  return {
    name: 'arbor:dev-csp',
    apply: 'serve',
    transformIndexHtml(html) {
      return html
        .replace("script-src 'self'", "script-src 'self' 'unsafe-inline'")
        .replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
        .replace("connect-src 'self'", "connect-src 'self' ws: http://localhost:*")
    }
  }
}

export default defineConfig({
  main: {
    define: { __ARBOR_VERSION__: JSON.stringify(process.env.npm_package_version ?? '0.1.0') },
    build: {
      outDir: resolve(root, 'out/main'),
      // out/main/cli.js runs on plain Node (>= 20.19), not only inside Electron.
      target: 'node20.19',
      // Every package.json dependency stays external (the default), plus the native addons.
      externalizeDeps: { include: nativeAddons },
      rolldownOptions: {
        input: {
          index: resolve(root, 'src/main/electron/main.ts'),
          // the desktop app's node, which main forks as a utilityProcess
          node: resolve(root, 'src/main/electron/node-entry.ts'),
          cli: resolve(root, 'src/main/cli/main.ts')
        },
        output: { format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js' }
      }
    }
  },
  preload: {
    build: {
      outDir: resolve(root, 'out/preload'),
      // Sandboxed preloads can only require('electron'): bundle everything else, emit CJS.
      externalizeDeps: false,
      rolldownOptions: {
        input: { index: resolve(root, 'src/preload/index.ts') },
        output: { format: 'cjs', entryFileNames: '[name].cjs' }
      }
    }
  },
  renderer: {
    root: resolve(root, 'src/renderer'),
    plugins: [react(), devCsp()],
    build: {
      outDir: resolve(root, 'out/renderer'),
      rolldownOptions: { input: resolve(root, 'src/renderer/index.html') }
    }
  }
})
