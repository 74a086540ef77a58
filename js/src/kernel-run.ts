/**
 * The `run_code` kernel tool's card (think_nb/kernel: the agent runs Python in the notebook's own
 * kernel, gated by approval, undoable).
 *
 * - Waiting for approval: the code highlighted, `button.think-edit` turns it into
 *   `textarea.think-code-edit` (`button.think-edit-discard` goes back to the model's code). What
 *   is typed is kept by tool call id, so a card rebuilt while the user types (a transcript or
 *   annotations update) keeps the edit, and render.ts gives the new box the focus and the caret.
 *   Approve sends the edited code as the `tool_approval` frame's `input` only when it differs
 *   from the model's (`editedInput`).
 * - Finished: the output `{type: "kernel-run", code, edited, stdout, stderr, result, outputs,
 *   changes, undoable, undone, duration_ms}` → `.think-run` with `.think-run-edited` ("edited"),
 *   `pre.think-run-stdout` / `pre.think-run-stderr` / `pre.think-run-result`, each output
 *   (`text/plain` → `pre.think-run-text`; `table` → the tool-output table of data-part.ts;
 *   `image/png` → `img.think-run-image` from a data: URL, only when the data is base64 PNG;
 *   `text/html` → `.think-run-html` through the panel's DOMPurify sanitiser), `.think-run-changes`
 *   (bound, rebound, deleted), `.think-run-mutated` ("changed in place: df — cannot be undone"), and
 *   `button.think-undo` (sends `tool_undo`; reads "undone", disabled, once the stored output says
 *   `undone`, so a reloaded page shows the same).
 *
 * Everything in the output is untrusted (model-written code, whatever that code printed): text
 * goes in as text, HTML only through `sanitizeHtml`, images only as validated PNG bytes.
 */
import { codeBlock } from "./code";
import { tableOutputElement } from "./data-part";
import { sanitizeHtml } from "./markdown";
import { RUN_CODE, type ToolPart, toolName } from "./ui-message";

export { RUN_CODE };

export interface KernelRunOutput {
  mime: string;
  data: unknown;
}

export interface KernelRunChanges {
  bound: string[];
  rebound: string[];
  deleted: string[];
  mutated: string[];
}

/** A finished `run_code` call's output, with every field checked (missing or malformed ones empty). */
export interface KernelRun {
  type: "kernel-run";
  code: string;
  edited: boolean;
  stdout: string;
  stderr: string;
  result: unknown;
  outputs: KernelRunOutput[];
  changes: KernelRunChanges;
  undoable: boolean;
  undone: boolean;
  /** After an undo: what was restored, and what cannot be undone and why. */
  undoNote: string;
  /** How much the code printed in all (stdout/stderr are bounded; the cut is marked in them). */
  stdoutChars: number | null;
  stderrChars: number | null;
  durationMs: number | null;
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);
const str = (x: unknown): string => (typeof x === "string" ? x : "");
const count = (x: unknown): number | null => (typeof x === "number" && Number.isFinite(x) ? x : null);
const names = (x: unknown): string[] => (Array.isArray(x) ? x.filter((n): n is string => typeof n === "string") : []);

/** `output` as a KernelRun when it is one (`type: "kernel-run"` with string `code`), else null. */
export function kernelRunOf(output: unknown): KernelRun | null {
  if (!isObj(output) || output.type !== "kernel-run" || typeof output.code !== "string") return null;
  const changes = isObj(output.changes) ? output.changes : {};
  const outputs = Array.isArray(output.outputs)
    ? output.outputs.filter((o): o is Obj => isObj(o) && typeof o.mime === "string").map((o) => ({ mime: o.mime as string, data: o.data }))
    : [];
  return {
    type: "kernel-run",
    code: output.code,
    edited: output.edited === true,
    stdout: str(output.stdout),
    stderr: str(output.stderr),
    result: output.result ?? null,
    outputs,
    changes: { bound: names(changes.bound), rebound: names(changes.rebound), deleted: names(changes.deleted), mutated: names(changes.mutated) },
    undoable: output.undoable === true,
    undone: output.undone === true,
    undoNote: str(output.undo_note),
    stdoutChars: count(output.stdout_chars),
    stderrChars: count(output.stderr_chars),
    durationMs: typeof output.duration_ms === "number" && Number.isFinite(output.duration_ms) ? output.duration_ms : null,
  };
}

/** Base64 whose bytes start with PNG's signature (`\x89PNG\r\n\x1a\n` encodes as `iVBORw0KGgo`). */
const PNG_BASE64 = /^iVBORw0KGgo[A-Za-z0-9+/]*={0,2}$/;

/**
 * A `data:image/png;base64,…` URL for `data` when it is base64 PNG (whitespace, as IPython's
 * base64 may hold line breaks, is dropped), else null: nothing else becomes an image source.
 */
export function pngDataUrl(data: unknown): string | null {
  if (typeof data !== "string") return null;
  const b64 = data.replace(/\s+/g, "");
  if (b64.length % 4 !== 0 || !PNG_BASE64.test(b64)) return null;
  return `data:image/png;base64,${b64}`;
}

function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

function labelled(cls: string, label: string, body: HTMLElement): HTMLElement {
  const div = h("div", cls);
  div.append(h("div", "think-tool-label", label), body);
  return div;
}

export function isRunCode(part: ToolPart): boolean {
  return toolName(part) === RUN_CODE;
}

/** The code the model proposed (the call's `input.code`), or "" when the input has none. */
export function proposedCode(part: ToolPart): string {
  return isObj(part.input) ? str(part.input.code) : "";
}

/** The code the user approved instead (the kernel keeps the model's `input` and records the edited
 * one as `approval.input`), or null when the call was approved as proposed (or not yet). */
export function approvedEdit(part: ToolPart): string | null {
  const input = part.approval?.input;
  return isObj(input) && typeof input.code === "string" ? input.code : null;
}

/** Code being edited, by tool call id (present while the card is in edit mode). */
const EDITS = new Map<string, string>();
/** Calls approved with edited code from this page, by tool call id. */
const SENT = new Map<string, string>();

/** The input to approve `part` with: `{...input, code}` when the user edited the code, else undefined. */
export function editedInput(part: ToolPart): Record<string, unknown> | undefined {
  const code = EDITS.get(part.toolCallId);
  if (code === undefined || code === proposedCode(part)) return undefined;
  return { ...(isObj(part.input) ? part.input : {}), code };
}

/** Remember that `part` was approved with `input` (its card says "edited" until the output does). */
export function noteApproved(part: ToolPart, input: Record<string, unknown> | undefined): void {
  EDITS.delete(part.toolCallId);
  if (input && typeof input.code === "string") SENT.set(part.toolCallId, input.code);
}

function editBox(part: ToolPart, code: string, disabled: boolean): HTMLTextAreaElement {
  const box = h("textarea", "think-code-edit");
  box.value = code;
  box.spellcheck = false;
  box.rows = Math.min(20, Math.max(3, code.split("\n").length + 1));
  box.disabled = disabled;
  box.dataset.focusKey = `code-edit:${part.toolCallId}`; // render.ts gives focus and caret back after a rebuild
  box.setAttribute("aria-label", "code to run (edit before approving)");
  box.addEventListener("input", () => EDITS.set(part.toolCallId, box.value));
  box.addEventListener("keydown", (e) => {
    if (e.key === "Tab" && !e.shiftKey) { // indent, as a code cell does, instead of leaving the box
      e.preventDefault();
      box.setRangeText("    ", box.selectionStart, box.selectionEnd, "end");
      EDITS.set(part.toolCallId, box.value);
    }
  });
  return box;
}

/**
 * The code section of a `run_code` card: highlighted, with Edit while it waits for approval
 * (`answered`: this view already answered, so nothing is editable), the edit box in edit mode.
 */
export function runCodeSection(part: ToolPart, answered: boolean): HTMLElement {
  const div = h("div", "think-tool-input think-run-code");
  const head = h("div", "think-tool-label", "code");
  div.append(head);
  const id = part.toolCallId;
  const waiting = part.state === "approval-requested";
  const sent = approvedEdit(part) ?? SENT.get(id);
  const run = part.state === "output-available" ? kernelRunOf(part.output) : null;
  const code = run?.code ?? sent ?? proposedCode(part);
  if (run ? run.edited : sent !== undefined && (answered || !waiting)) {
    const mark = h("span", "think-run-edited", "edited");
    mark.title = "you edited this code before approving it; the model is told what ran";
    div.append(mark);
  }
  if (!waiting || answered) {
    div.append(codeBlock(code));
    return div;
  }
  const editing = EDITS.get(id);
  if (editing === undefined) {
    const edit = h("button", "think-edit", "Edit");
    edit.title = "edit the code before approving it";
    edit.disabled = answered;
    const block = codeBlock(code);
    edit.addEventListener("click", () => {
      EDITS.set(id, code);
      const box = editBox(part, code, false);
      block.replaceWith(box);
      edit.replaceWith(discardButton(part, box));
      box.focus();
    });
    div.append(edit, block);
  } else {
    const box = editBox(part, editing, answered);
    div.append(discardButton(part, box), box);
  }
  return div;
}

function discardButton(part: ToolPart, box: HTMLTextAreaElement): HTMLButtonElement {
  const discard = h("button", "think-edit-discard", "Discard edit");
  discard.title = "go back to the model's code";
  discard.disabled = box.disabled;
  discard.addEventListener("click", () => {
    EDITS.delete(part.toolCallId);
    const div = discard.parentElement;
    if (div) div.replaceWith(runCodeSection(part, false));
  });
  return discard;
}

function outputElement(out: KernelRunOutput): HTMLElement | null {
  switch (out.mime) {
    case "text/plain":
      return typeof out.data === "string" ? h("pre", "think-run-text", out.data) : null;
    case "image/png": {
      const url = pngDataUrl(out.data);
      if (!url) return h("div", "think-run-rejected", "an image/png output that is not base64 PNG was not shown");
      const img = h("img", "think-run-image");
      img.alt = "figure";
      img.src = url;
      return img;
    }
    case "table": {
      const data = typeof out.data === "string" ? { type: "table", markdown: out.data } : out.data;
      return tableOutputElement(data, "table");
    }
    case "text/html": {
      if (typeof out.data !== "string") return null;
      const div = h("div", "think-run-html");
      div.innerHTML = sanitizeHtml(out.data);
      return div;
    }
    default:
      return null;
  }
}

function resultElement(result: unknown): HTMLElement | null {
  if (result === null || result === undefined || result === "") return null;
  const table = tableOutputElement(result, "result");
  if (table) return table;
  const text = typeof result === "string" ? result : JSON.stringify(result, null, 2);
  return labelled("think-tool-output", "result", h("pre", "think-run-result", text));
}

/** What the Undo control of a card needs. */
export interface UndoControl {
  undo?(toolCallId: string): void;
  /** Calls whose undo this view sent (the button waits for the kernel). */
  undoSent?: Record<string, boolean>;
}

/** The finished card's body for a `kernel-run` output. */
export function kernelRunElement(part: ToolPart, run: KernelRun, ctl: UndoControl): HTMLElement {
  const box = h("div", "think-tool-output think-run");
  box.dataset.undone = String(run.undone);
  const meta = [run.durationMs !== null ? `ran in ${run.durationMs < 1000 ? `${Math.round(run.durationMs)} ms` : `${(run.durationMs / 1000).toFixed(1)} s`}` : "", run.edited ? "edited before it ran" : ""];
  box.append(h("div", "think-tool-label", ["output", ...meta].filter(Boolean).join(" · ")));
  const printed = (cls: string, text: string, chars: number | null): void => {
    if (!text) return;
    const pre = h("pre", cls, text);
    if (chars !== null && chars > text.length) pre.title = `${chars} characters printed in all; the start is shown`;
    box.append(pre);
  };
  printed("think-run-stdout", run.stdout, run.stdoutChars);
  printed("think-run-stderr", run.stderr, run.stderrChars);
  for (const out of run.outputs) {
    const el = outputElement(out);
    if (el) box.append(el);
  }
  const result = resultElement(run.result);
  if (result) box.append(result);
  const { bound, rebound, deleted, mutated } = run.changes;
  const said = [["bound", bound], ["rebound", rebound], ["deleted", deleted]] as const;
  const changed = said.filter(([, list]) => list.length).map(([what, list]) => `${what} ${list.join(", ")}`);
  if (changed.length) box.append(h("div", "think-run-changes", `names ${run.undone ? "put back" : "changed"}: ${changed.join(" · ")}`));
  if (mutated.length) box.append(h("div", "think-run-mutated", `changed in place: ${mutated.join(", ")} — cannot be undone`));
  if (run.undoNote) box.append(h("div", "think-run-undo-note", run.undoNote));
  if (run.undoable || run.undone) {
    const undo = h("button", "think-undo", run.undone ? "Undone" : "Undo");
    const sent = ctl.undoSent?.[part.toolCallId] === true;
    undo.disabled = run.undone || sent || !ctl.undo;
    undo.title = run.undone ? "these bindings were put back" : "put back the names this run bound, rebound or deleted";
    if (sent && !run.undone) undo.textContent = "undoing…";
    undo.addEventListener("click", () => {
      undo.disabled = true;
      undo.textContent = "undoing…";
      ctl.undo?.(part.toolCallId);
    });
    box.append(undo);
  }
  return box;
}
