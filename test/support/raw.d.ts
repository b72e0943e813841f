/// <reference types="vite/types/importMeta.d.ts" />
// Vite's `import.meta.glob` (vitest's own vite), for tests that list the repository's files.

/** Vite's `?raw` imports: a file's text, for tests that check documentation against the code. */
declare module "*?raw" {
  const text: string;
  export default text;
}
