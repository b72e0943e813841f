import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { javascript } from "@codemirror/lang-javascript";
import { defaultHighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers } from "@codemirror/view";

/**
 * A CodeMirror 6 editor for JavaScript in `parent`; answers the function that removes it. Tab is left
 * to move focus (no indentWithTab), so the editor never traps a keyboard user; its content carries the
 * label screen readers announce. Loaded only by pages that edit code (code-editor.tsx).
 */
export function mountEditor(parent: HTMLElement, options: { label: string; value: string; onChange: (code: string) => void }): () => void {
  const view = new EditorView({
    parent,
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
