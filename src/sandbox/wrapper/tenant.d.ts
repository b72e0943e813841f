/** The tenant's instrumented code, added to each script by worker-script.ts; the wrapper checks what it exports. */
declare const exported: unknown;
export default exported;
