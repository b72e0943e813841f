/** Vite's `?raw` imports: a file's text, for tests that check documentation against the code. */
declare module "*?raw" {
  const text: string;
  export default text;
}
