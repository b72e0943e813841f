import { useEffect, useRef, useState } from "preact/hooks";

/**
 * The code editor of transforms and reactor code: CodeMirror, most of the console's weight, is
 * fetched the first time a page shows an editor (a chunk of the same origin), not at sign-in.
 */
export function CodeEditor(props: { label: string; value: string; onChange: (code: string) => void }) {
  const host = useRef<HTMLDivElement>(null);
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    let destroy: (() => void) | undefined;
    let current = true;
    import("./codemirror")
      .then(({ mountEditor }) => {
        if (current)
          destroy = mountEditor(host.current!, { label: props.label, value: props.value, onChange: (code) => onChange.current(code) });
      })
      .catch(() => setFailed(true));
    return () => {
      current = false;
      destroy?.();
    };
  }, []);
  return (
    <div class="editor">
      <div ref={host} />
      {failed && (
        <p class="state error" role="alert">
          The editor could not be loaded: reload the page.
        </p>
      )}
    </div>
  );
}
