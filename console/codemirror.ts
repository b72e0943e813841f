import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { javascript } from "@codemirror/lang-javascript";
import { defaultHighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers } from "@codemirror/view";

/**
 * A CodeMirror 6 editor for JavaScript in `host`; answers the function that removes it. Tab is left
 * to move focus (no indentWithTab), so the editor never traps a keyboard user; its content carries the
 * label screen readers announce. Loaded only by pages that edit code (code-editor.tsx).
 *
 * The editor lives in a shadow root of `host`: there CodeMirror's themes go into a constructed style
 * sheet (adoptedStyleSheets), which the console's CSP allows, where in the document itself it would add
 * a <style> element, which `style-src 'self'` refuses (and the editor would lose its layout).
 */
export function mountEditor(host: HTMLElement, options: { label: string; value: string; onChange: (code: string) => void }): () => void {
  const root = host.shadowRoot ?? host.attachShadow({ mode: "open" });
  const view = new EditorView({
    parent: root,
    root,
    state: EditorState.create({
      doc: options.value,
      extensions: [
        lineNumbers(),
        history(),
        keymap.of([...defaultKeymap, ...historyKeymap]),
        javascript(),
        syntaxHighlighting(defaultHighlightStyle),
        EditorView.contentAttributes.of({ "aria-label": options.label }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) options.onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
  return () => view.destroy();
}
