/**
 * The panel's CSS. Colours come from JupyterLab's theme variables (with fallbacks for
 * other hosts), so the panel reads in light and dark themes alike.
 */
export const CSS = `
/* A panel's static transcript output (for a saved notebook) is hidden beside the rendered panel. */
.jp-OutputArea-child:has(.think-panel) + .jp-OutputArea-child:has(.think-static-transcript) { display: none; }
.think-panel {
  --think-fg: var(--jp-ui-font-color1, #1f1f1f);
  --think-muted: var(--jp-ui-font-color2, #616161);
  --think-bg: var(--jp-layout-color1, #ffffff);
  --think-bg2: var(--jp-layout-color2, #eeeeee);
  --think-border: var(--jp-border-color2, #e0e0e0);
  --think-brand: var(--jp-brand-color1, #1976d2);
  --think-error: var(--jp-error-color1, #d32f2f);
  --think-ok: var(--jp-success-color1, #388e3c);
  --think-warn: var(--jp-warn-color1, #f57c00);
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-content-font-size1, 14px);
  color: var(--think-fg);
  background: var(--think-bg);
  border: 1px solid var(--think-border);
  border-radius: 6px;
  display: flex;
  flex-direction: column;
  max-width: 100%;
  container-type: inline-size;
}
.think-header { display: flex; flex-wrap: nowrap; gap: 8px; align-items: center; min-width: 0; padding: 6px 10px; border-bottom: 1px solid var(--think-border); }
.think-header > * { flex: 0 1 auto; min-width: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.think-header > .think-tabs, .think-header > button { flex: none; overflow: visible; }
.think-header:has(.think-clear-confirm:not([hidden])) > :is(.think-db-path, .think-totals) { display: none; }
.think-empty { color: var(--think-muted); font-size: 0.9em; padding: 4px 0; }
.think-older { align-self: center; margin: 2px 0 6px; font-size: 0.85em; }
.think-clear-confirm { display: inline-flex; gap: 6px; align-items: center; font-size: 0.85em; }
.think-panel button.think-clear-yes { border-color: var(--think-error); color: var(--think-error); }
.think-cut, .think-stopped { margin-top: 4px; font-size: 0.85em; color: var(--think-warn); }
.think-stopped { color: var(--think-muted); font-style: italic; }
.think-panel button.think-continue { font-size: 0.9em; }
.think-versions { display: inline-flex; flex-wrap: wrap; gap: 4px; align-items: center; margin-top: 4px; font-size: 0.8em; color: var(--think-muted); }
.think-panel .think-versions button { padding: 0 6px; }
.think-version-fork { margin-left: 4px; font-style: italic; }
.think-version-compare-wrap { display: contents; }
.think-compare { flex-basis: 100%; margin-top: 4px; padding: 4px 6px; border: 1px solid var(--think-border, #ccc); border-radius: 4px; }
.think-compare del { background: rgba(255, 0, 0, 0.15); }
.think-compare ins { background: rgba(0, 160, 0, 0.15); text-decoration: underline; }
.think-compare-rows { margin-top: 4px; border-collapse: collapse; font-size: 0.9em; }
.think-compare-rows th, .think-compare-rows td { padding: 0 6px; text-align: left; }
.think-agent-name { font-weight: 600; }
.think-status { font-size: 0.85em; color: var(--think-muted); }
.think-header > .think-agent-name { flex: none; max-width: 45%; } /* the name keeps its width; the path gives way */
.think-header > .think-status { min-width: 4.5em; }
.think-panel[data-status="streaming"] .think-status, .think-panel[data-status="submitted"] .think-status { color: var(--think-brand); }
.think-panel[data-status="error"] .think-status { color: var(--think-error); }
.think-db-path { font-family: var(--jp-code-font-family, monospace); font-size: 0.8em; color: var(--think-muted); text-align: right; }
.think-header > .think-db-path { flex: 1 1 0; min-width: 4em; }
@container (max-width: 480px) {
  .think-header { gap: 6px; padding: 6px 8px; }
  .think-header > .think-totals { display: none; }
  .think-panel .think-header button { padding: 1px 5px; }
}
/* narrower (a 760 px page with Lab's file browser open: ~377 px): the path, cut to "/w…ite", says
   nothing; it goes first (the name's tooltip still gives it), and the header wraps rather than push
   Clear out of the panel */
@container (max-width: 400px) {
  .think-header { flex-wrap: wrap; row-gap: 4px; }
  .think-header > .think-db-path { display: none; }
}
.think-disconnected { margin: 6px 10px 0; padding: 6px 8px; border: 1px solid var(--think-warn); border-radius: 4px; color: var(--think-warn); font-weight: 600; }
.think-panel[data-kernel="gone"] .think-messages button, .think-panel[data-kernel="gone"] .think-messages input { pointer-events: none; opacity: 0.5; }
.think-unsent { margin-top: 4px; font-size: 0.85em; color: var(--think-warn); }
.think-queued { margin-top: 4px; font-size: 0.85em; color: var(--think-muted); }
.think-message[data-queued="true"] { opacity: 0.75; }
.think-message[data-unsent="true"] { border: 1px dashed var(--think-warn); }
.think-error { margin: 6px 10px 0; padding: 6px 8px; border: 1px solid var(--think-error); border-radius: 4px; color: var(--think-error); white-space: pre-wrap; }
.think-messages { display: flex; flex-direction: column; gap: 8px; padding: 10px; max-height: 520px; min-height: 60px; overflow-y: auto; }
.think-message { max-width: 90%; padding: 6px 10px; border-radius: 8px; overflow-wrap: anywhere; }
.think-message[data-role="user"] { align-self: flex-end; background: var(--think-bg2); }
.think-message[data-role="assistant"] { align-self: flex-start; border-left: 3px solid var(--think-brand); }
.think-message[data-role="system"] { align-self: center; color: var(--think-muted); font-style: italic; }
.think-text > :first-child, .think-text > .think-chunk:first-child > :first-child { margin-top: 0; }
.think-text > :last-child, .think-text > .think-chunk:last-child > :last-child { margin-bottom: 0; }
/* a long text's blocks in chunks of 64 (markdown.ts): the browser skips the layout of those off screen.
   A chunk is its own formatting context (no margin collapsing across it): its first block has no top margin. */
.think-chunk { content-visibility: auto; contain-intrinsic-block-size: auto 3000px; }
.think-chunk > :first-child { margin-top: 0; }
/* a single line break shows (markdown would join the lines): a message typed with Shift+Enter, a poem */
.think-text p { white-space: pre-line; }
.think-text a { color: var(--think-brand); }
.think-text pre, .think-tool pre { background: var(--think-bg2); padding: 6px; border-radius: 4px; overflow-x: auto; font-family: var(--jp-code-font-family, monospace); font-size: 0.9em; margin: 4px 0; white-space: pre-wrap; }
.think-text code { font-family: var(--jp-code-font-family, monospace); }
.think-reasoning { color: var(--think-muted); margin: 4px 0; }
.think-reasoning summary, .think-tool summary { cursor: pointer; }
.think-tool { border: 1px solid var(--think-border); border-radius: 6px; padding: 4px 8px; margin: 6px 0; }
.think-tool-name { font-family: var(--jp-code-font-family, monospace); font-weight: 600; }
.think-tool-server { font-size: 0.75em; padding: 0 6px; margin-left: 6px; border-radius: 8px; border: 1px solid var(--think-border); color: var(--think-muted); }
.think-tool-badge { font-size: 0.8em; margin-left: 6px; padding: 0 6px; border-radius: 8px; border: 1px solid var(--think-border); color: var(--think-muted); }
.think-tool[data-outcome="done"] .think-tool-badge { color: var(--think-ok); border-color: var(--think-ok); }
.think-tool[data-outcome="failed"] .think-tool-badge, .think-tool[data-outcome="denied"] .think-tool-badge, .think-tool[data-outcome="blocked"] .think-tool-badge { color: var(--think-error); border-color: var(--think-error); }
.think-tool[data-outcome="blocked"] .think-tool-badge, .think-tool[data-outcome="substituted"] .think-tool-badge { border-style: dashed; }
.think-tool[data-outcome="waiting"] .think-tool-badge { color: var(--think-warn); border-color: var(--think-warn); font-weight: 600; }
.think-tool[data-outcome="running"] .think-tool-badge, .think-tool[data-outcome="approved"] .think-tool-badge { color: var(--think-brand); border-color: var(--think-brand); }
.think-tool-label { font-size: 0.8em; color: var(--think-muted); }
.think-tool-error, .think-message-error { color: var(--think-error); }
.think-message-error { margin-top: 4px; white-space: pre-wrap; }
.think-composer { display: flex; gap: 6px; padding: 8px 10px; border-top: 1px solid var(--think-border); }
.think-input { flex: 1; resize: vertical; min-height: 2.4em; font: inherit; color: var(--think-fg); background: var(--think-bg); border: 1px solid var(--think-border); border-radius: 4px; padding: 4px 6px; }
.think-panel button { font: inherit; padding: 2px 10px; border-radius: 4px; border: 1px solid var(--think-border); background: var(--think-bg2); color: var(--think-fg); cursor: pointer; }
.think-panel button.think-send { background: var(--think-brand); color: var(--jp-ui-inverse-font-color1, #fff); border-color: var(--think-brand); }
.think-panel button:disabled { opacity: 0.5; cursor: default; }
.think-panel textarea.think-input[aria-disabled="true"] { opacity: 0.5; cursor: not-allowed; }
.think-panel [hidden] { display: none !important; }
.think-totals { font-size: 0.8em; color: var(--think-muted); }
.think-panel[data-status^="awaiting"] .think-status { color: var(--think-warn); font-weight: 600; }
.think-approval { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 6px 0 2px; padding: 6px; border: 1px dashed var(--think-warn); border-radius: 4px; }
.think-approval-label { font-weight: 600; }
.think-approval-call { flex-basis: 100%; font-family: var(--jp-code-font-family, monospace); font-size: 0.9em; }
.think-approval-summary { flex-basis: 100%; }
.think-approval-risk { font-size: 0.8em; padding: 0 6px; border-radius: 8px; border: 1px solid var(--think-border); color: var(--think-muted); }
.think-approval-risk[data-risk="medium"] { border-color: var(--think-warn); color: var(--think-warn); }
.think-approval-risk[data-risk="high"] { border-color: var(--think-error); color: var(--think-error); font-weight: 600; }
.think-code .hljs-keyword, .think-code .hljs-meta { color: var(--jp-mirror-editor-keyword-color, #008000); font-weight: 600; }
.think-code .hljs-string { color: var(--jp-mirror-editor-string-color, #ba2121); }
.think-code .hljs-number, .think-code .hljs-literal { color: var(--jp-mirror-editor-number-color, #080); }
.think-code .hljs-comment { color: var(--jp-mirror-editor-comment-color, #408080); font-style: italic; }
.think-code .hljs-built_in { color: var(--jp-mirror-editor-builtin-color, #008000); }
.think-code .hljs-title, .think-code .hljs-params { color: var(--jp-mirror-editor-def-color, #0000ff); }
.think-panel button.think-approve { background: var(--think-ok); border-color: var(--think-ok); color: var(--jp-ui-inverse-font-color1, #fff); }
.think-panel button.think-deny { border-color: var(--think-error); color: var(--think-error); }
.think-deny-reason { font: inherit; flex: 1; min-width: 8em; color: var(--think-fg); background: var(--think-bg); border: 1px solid var(--think-border); border-radius: 4px; padding: 2px 6px; }
.think-code { position: relative; }
.think-run-code .think-tool-label { display: inline-block; margin-right: 6px; }
.think-run-edited { font-size: 0.8em; padding: 0 6px; border-radius: 8px; border: 1px solid var(--think-warn); color: var(--think-warn); }
.think-panel button.think-edit, .think-panel button.think-edit-discard { font-size: 0.8em; padding: 0 6px; }
.think-code-edit { display: block; box-sizing: border-box; width: 100%; margin: 4px 0; font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 0.9em); tab-size: 4; resize: vertical; }
.think-run pre { margin: 4px 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24em; overflow: auto; }
.think-run-stderr { color: var(--jp-error-color1, #d32f2f); }
.think-run-image { display: block; max-width: 100%; height: auto; margin: 4px 0; background: #fff; }
.think-run-changes, .think-run-undo-note { font-size: 0.85em; color: var(--think-muted); margin: 4px 0; }
.think-run-mutated, .think-run-rejected { font-size: 0.85em; color: var(--think-warn); margin: 4px 0; }
.think-notice { padding: 2px 10px 6px; font-size: 0.85em; color: var(--think-warn); }
.think-composer { flex-wrap: wrap; }
.think-attachments { flex: 1 1 100%; display: flex; gap: 6px; flex-wrap: wrap; }
.think-attachment { position: relative; display: inline-flex; align-items: center; border: 1px solid var(--think-border); border-radius: 4px; padding: 2px; }
.think-attachment img { max-height: 56px; max-width: 96px; display: block; }
.think-attachment-remove { border: none; background: none; cursor: pointer; padding: 0 4px; }
.think-attach-note { padding: 2px 10px 6px; font-size: 0.85em; color: var(--think-warn); }
.think-image, .think-tool-image { display: block; max-width: min(100%, 480px); max-height: 360px; margin: 4px 0; border-radius: 4px; }
.think-file-chip { display: inline-block; font-size: 0.85em; padding: 1px 6px; border: 1px solid var(--think-border); border-radius: 10px; margin: 2px 4px 2px 0; }
.think-tool-text { white-space: pre-wrap; margin: 2px 0; }
.think-panel button.think-code-copy { position: absolute; top: 4px; right: 4px; font-size: 0.75em; padding: 0 6px; opacity: 0.8; }
.think-into-cell-bar { display: flex; align-items: center; gap: 8px; margin-top: 4px; }
.think-into-cell-note { font-size: 0.8em; color: var(--think-muted); }
.think-subagent { border: 1px dashed var(--think-border); border-radius: 6px; padding: 4px 8px; margin: 6px 0; }
.think-subagent-name { font-weight: 600; }
.think-data { border: 1px solid var(--think-border); border-radius: 6px; padding: 2px 8px; margin: 6px 0; font-size: 0.9em; }
.think-data summary { cursor: pointer; color: var(--think-muted); }
.think-data-table { overflow-x: auto; }
.think-data-table table { border-collapse: collapse; font-size: 0.9em; }
.think-data-table th, .think-data-table td { border: 1px solid var(--think-border); padding: 1px 6px; }
.think-usage { margin-top: 4px; font-size: 0.75em; color: var(--think-muted); }
.think-panel button.think-regenerate { margin-top: 4px; font-size: 0.8em; }
.think-tabs { display: flex; gap: 2px; }
.think-panel button.think-tab { font-size: 0.85em; padding: 1px 8px; background: transparent; border-color: transparent; color: var(--think-muted); }
.think-panel button.think-tab[aria-selected="true"] { color: var(--think-fg); border-color: var(--think-border); background: var(--think-bg2); font-weight: 600; }
.think-context { display: flex; flex-direction: column; gap: 8px; padding: 10px; max-height: 600px; overflow-y: auto; }
.think-context-bar { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
.think-session-select { font: inherit; color: var(--think-fg); background: var(--think-bg); border: 1px solid var(--think-border); border-radius: 4px; padding: 1px 4px; }
.think-context-totals, .think-context-note, .think-context-tokens, .think-context-description { font-size: 0.85em; color: var(--think-muted); }
.think-context-blocks { display: flex; flex-direction: column; gap: 8px; }
.think-context-block { border: 1px solid var(--think-border); border-radius: 6px; padding: 6px 8px; }
.think-mcp { margin-top: 10px; }
.think-mcp-title { font-weight: 600; margin-bottom: 4px; }
.think-mcp-server { border: 1px solid var(--think-border); border-radius: 6px; padding: 4px 8px; margin-bottom: 4px; }
.think-mcp-name { font-family: var(--jp-code-font-family, monospace); font-weight: 600; margin-right: 8px; }
.think-mcp-state { color: var(--think-muted); font-size: 0.85em; }
.think-mcp-server[data-state=failed] .think-mcp-state { color: var(--think-error, #c62828); }
.think-mcp-error { font-size: 0.8em; color: var(--think-error, #c62828); white-space: pre-wrap; }
.think-context-head { display: flex; gap: 6px; align-items: baseline; }
.think-context-label { font-family: var(--jp-code-font-family, monospace); font-weight: 600; }
.think-context-kind { font-size: 0.75em; padding: 0 6px; border-radius: 8px; border: 1px solid var(--think-border); color: var(--think-muted); }
.think-context-usage { height: 6px; margin: 6px 0 2px; border-radius: 3px; background: var(--think-bg2); overflow: hidden; }
.think-context-usage-fill { height: 100%; background: var(--think-brand); transition: width 0.2s; }
.think-context-usage[data-level="high"] .think-context-usage-fill { background: var(--think-warn); }
.think-context-content summary { cursor: pointer; font-size: 0.85em; }
.think-context-text { background: var(--think-bg2); padding: 6px; border-radius: 4px; margin: 4px 0 0; white-space: pre-wrap; overflow-wrap: anywhere; font-family: var(--jp-code-font-family, monospace); font-size: 0.85em; }
`;
