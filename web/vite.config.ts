// The UI's build: hashed names under /assets/, nothing inlined (the pages'
// Content-Security-Policy allows this origin's files only), the diff
// editor (CodeMirror) in the review page's own chunk.
import { defineConfig } from "vite";

export default defineConfig({
	esbuild: { jsx: "automatic", jsxImportSource: "preact" },
	build: {
		outDir: "dist",
		assetsDir: "assets",
		assetsInlineLimit: 0,
		modulePreload: { polyfill: false },
		target: "es2022",
		sourcemap: false,
		reportCompressedSize: false,
		chunkSizeWarningLimit: 2000,
	},
	worker: { format: "es" },
});
