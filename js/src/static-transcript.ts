/**
 * What a reopened notebook shows of a panel when no widget renders: only its static transcript.
 *
 * A displayed panel is two outputs (think_nb/panel/widget.py `ChatPanel._ipython_display_`): the
 * widget view, then a sanitised transcript marked `think-static-transcript`. Reopened without its
 * kernel (or before the widget manager has the model), JupyterLab's and Notebook 7's widget renderer
 * fills the first output with "Loading widget...", "Error displaying widget: model not found" or
 * "Error displaying widget". The transcript's own `<style>` hides that line only in a trusted
 * notebook: an untrusted one (a notebook someone sent you, a download) has its `<style>` stripped.
 * This rule ships with the think-nb-cells JupyterLab extension (installed with think_nb, loaded by
 * Lab 4 and Notebook 7 whatever the notebook's trust), so the line is hidden either way.
 *
 * The rule hides an output that holds no rendered panel right before a static transcript; a
 * rendered panel's own CSS (styles.ts) hides the transcript beside it instead.
 */
export const STATIC_TRANSCRIPT_CSS =
  ".jp-OutputArea-child:not(:has(.think-panel)):has(+ .jp-OutputArea-child .think-static-transcript) { display: none; }";

/** The id of the `<style>` element `installStaticTranscriptStyle` adds (once per document). */
export const STATIC_TRANSCRIPT_STYLE_ID = "think-nb-static-transcript-style";

/** Add the rule to `doc`'s head once; returns the style element. */
export function installStaticTranscriptStyle(doc: Document): HTMLStyleElement {
  const existing = doc.getElementById(STATIC_TRANSCRIPT_STYLE_ID);
  if (existing instanceof HTMLStyleElement) return existing;
  const style = doc.createElement("style");
  style.id = STATIC_TRANSCRIPT_STYLE_ID;
  style.textContent = STATIC_TRANSCRIPT_CSS;
  doc.head.append(style);
  return style;
}
