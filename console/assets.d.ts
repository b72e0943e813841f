/** Style sheets imported for esbuild to bundle into the console's one CSS file. */
declare module "*.css";
