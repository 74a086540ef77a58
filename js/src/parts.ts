/**
 * DOM for one UIMessage and its parts: markdown text (code blocks with a copy button),
 * reasoning (collapsed), tool cards (collapsible; Approve / Deny while approval is
 * requested), sub-agent cards, sources, and a usage footer.
 *
 * Stable classes and data attributes are part of the contract with the browser tests:
 * `.think-message[data-role][data-message-id]`, `.think-text`, `.think-code-copy`,
 * `.think-tool[data-tool-name][data-state][data-outcome]` (state: the AI SDK state, also the
 * badge's tooltip; outcome: running | done | failed | blocked | substituted | waiting | approved |
 * denied | no-result, what the badge says in words) holding `.think-tool-input` and
 * `.think-tool-output` or `.think-tool-error`, `.think-approval` with
 * `button.think-approve` / `button.think-deny` / `input.think-deny-reason` (Enter in it denies), on a `run_code` card
 * `button.think-into-cell` and `.think-into-cell-note` (the card's `data-into-cell`: inserted | copied | failed),
 * `.think-subagent[data-status]`, `.think-usage[data-source]` (reported | unknown),
 * `button.think-regenerate`, `.think-cut` with `button.think-continue` (a reply cut at its token
 * limit), `.think-stopped`, `.think-versions` with `button.think-version-prev` / `-next`.
 */
import { growthOf } from "./accumulate";
import { INTO_CELL_NOTE, type IntoCellOutcome, intoCell } from "./cell-insert";
import { codeBlock } from "./code";
import { dataContextElement, tableOutputElement } from "./data-part";
import { type UndoControl, editedInput, isRunCode, kernelRunElement, kernelRunOf, noteApproved, runCodeSection } from "./kernel-run";
import { StreamingMarkdown, renderMarkdownInto } from "./markdown";
import { contentOutputElement, filePartElement, hasImages } from "./media";
import { INTERRUPTED_NOTE, type ViewMessage } from "./state";
import { type ToolPart, type UIPart, isToolPart, toolName } from "./ui-message";
import { formatTurnUsage, turnUsage } from "./usage";

function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

function pretty(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

export { codeBlock };

/** Tools whose input is `{code: str}`, shown as highlighted Python: `execute` (the sandbox,
 * think_nb.workspace.execute) and `run_code` (the kernel tool, which also gets "Into a cell"). */
const CODE_TOOLS = new Set(["execute", "run_code"]);

/** The `code` of a code tool's input, else null. */
function inputCode(part: ToolPart): string | null {
  const input = part.input as { code?: unknown } | undefined;
  return CODE_TOOLS.has(toolName(part)) && input && typeof input.code === "string" ? input.code : null;
}

/**
 * The code "Into a cell" puts in the notebook: what ran (a `kernel-run` output's `code`, think_nb.kernel),
 * else the code the person approved it with (`approval.input.code`, an edited approval), else the model's.
 */
export function cellCode(part: ToolPart, modelCode: string): string {
  const output = part.state === "output-available" ? (part.output as { type?: unknown; code?: unknown } | null) : null;
  if (output && output.type === "kernel-run" && typeof output.code === "string") return output.code;
  const edited = (part.approval as { input?: { code?: unknown } } | undefined)?.input?.code;
  return typeof edited === "string" ? edited : modelCode;
}

/** What "Into a cell" did for a call in this page, by toolCallId (a card rebuilt later still says it). */
const INTO_CELL = new Map<string, IntoCellOutcome>();

/** `button.think-into-cell` and its `.think-into-cell-note`: the code into a new cell below the panel
 * (cell-insert.ts), else onto the clipboard; the card's `data-into-cell` says which. */
function intoCellBar(card: HTMLElement, toolCallId: string, code: string): HTMLElement {
  const bar = h("div", "think-into-cell-bar");
  const button = h("button", "think-into-cell", "Into a cell");
  button.type = "button";
  button.title = "Put this code into a new notebook cell below the panel (copies it where the notebook cannot be reached)";
  const note = h("span", "think-into-cell-note");
  const show = (outcome: IntoCellOutcome | undefined): void => {
    note.textContent = outcome ? INTO_CELL_NOTE[outcome] : "";
    if (outcome) card.dataset.intoCell = outcome;
  };
  show(INTO_CELL.get(toolCallId));
  button.addEventListener("click", () => {
    void intoCell(button, code).then((outcome) => {
      INTO_CELL.set(toolCallId, outcome);
      show(outcome);
    });
  });
  bar.append(button, note);
  return bar;
}

function section(cls: string, label: string, body: string): HTMLElement {
  const div = h("div", cls);
  div.append(h("div", "think-tool-label", label), h("pre", undefined, body));
  return div;
}

/** A call `before_tool_call` did not let run (the kernel's `annotations.tools`). */
export interface ToolDecision {
  action: "block" | "substitute";
  reason?: string | null;
}

/** Versions of a regenerated reply (the kernel's `annotations.branches`): `ids[index]` is shown. */
export interface Versions {
  index: number;
  count: number;
  ids: string[];
  /** A forked reply (`agent.fork`) beside its original `of`: the text's word diff (`=`, `-`, `+`) and
   * the other aspects that differ, as text (`think_nb.compare`). */
  compare?: { of: string; label?: string | null; diff: [string, string][]; rows: { aspect: string; a: string; b: string }[] };
}

/** What a message's controls need from the panel. */
export interface MessageContext extends UndoControl {
  /** `input`: the call's input as the user edited it (a `run_code` card), sent only when it changed. */
  approve(toolCallId: string, input?: Record<string, unknown>): void;
  deny(toolCallId: string, reason: string): void;
  regenerate(): void;
  /** toolCallIds answered in this view (buttons disabled). */
  responded: Record<string, boolean>;
  /** Show Regenerate under this message (the last assistant message, panel idle, nothing to approve). */
  canRegenerate: boolean;
  /** Calls blocked or substituted by `before_tool_call`, by toolCallId. */
  decisions?: Record<string, ToolDecision>;
  /** The finish reason of this message's turn (`length`: cut at the token limit). */
  finishReason?: string;
  /** Offer Continue under a cut reply (the last message, panel idle). */
  canContinue?: boolean;
  continueTurn?(): void;
  /** This reply's versions (regenerate), and whether switching is allowed now (panel idle). */
  versions?: Versions;
  canSwitch?: boolean;
  switchBranch?(messageId: string): void;
  /** Tool name → the MCP server it came from (the card names it). */
  toolServers?: Record<string, string>;
  /** The kernel is gone (`kernelGone`): every control that asks the kernel is disabled. */
  offline?: boolean;
}

/** When each running tool call was first drawn (the live "running… 3.2 s"). */
const STARTED = new Map<string, number>();

/** The words a tool card's badge says, and the outcome class its colour follows. */
export interface ToolLabel {
  outcome: "running" | "done" | "failed" | "blocked" | "substituted" | "waiting" | "approved" | "denied" | "no-result";
  text: string;
}

export function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
}

/**
 * What a tool card says. `live`: its turn is streaming (a call without a result is running);
 * `pending`: [n, of] among this message's calls waiting for approval; `elapsedMs`: how long it runs.
 */
export function toolLabel(
  part: ToolPart,
  opts: {
    live: boolean;
    decision?: ToolDecision;
    responded?: boolean;
    pending?: [number, number];
    elapsedMs?: number;
    /** Other calls of the message still wait for an answer (approved calls run once all are answered). */
    othersWaiting?: boolean;
  } = {
    live: false,
  },
): ToolLabel {
  const approval = part.approval;
  switch (part.state) {
    case "input-streaming":
    case "input-available":
      if (!opts.live) return { outcome: "no-result", text: "no result" };
      return { outcome: "running", text: `running… ${seconds(opts.elapsedMs ?? 0)}` };
    case "approval-requested": {
      if (opts.responded) return { outcome: "approved", text: "answered — waiting for the kernel" };
      const [n, of] = opts.pending ?? [1, 1];
      return { outcome: "waiting", text: of > 1 ? `waiting for your approval (${n} of ${of})` : "waiting for your approval" };
    }
    case "approval-responded":
      if (approval?.approved === false) return { outcome: "denied", text: approval.reason ? `denied: ${approval.reason}` : "denied" };
      if (opts.othersWaiting) return { outcome: "approved", text: "approved — runs when the others are answered" };
      return { outcome: "approved", text: "approved — running" };
    case "output-available":
      if (part.preliminary === true) {
        if (!opts.live) return { outcome: "no-result", text: "partial output only" };
        return { outcome: "running", text: `running… ${seconds(opts.elapsedMs ?? 0)} — partial output` };
      }
      if (opts.decision?.action === "block") {
        const reason = opts.decision.reason || (typeof part.output === "string" ? part.output : "");
        return { outcome: "blocked", text: reason ? `blocked by before_tool_call: ${reason}` : "blocked by before_tool_call" };
      }
      if (opts.decision?.action === "substitute") return { outcome: "substituted", text: "substituted" };
      return { outcome: "done", text: "done" };
    case "output-error":
      return { outcome: "failed", text: "failed" };
    case "output-denied":
      return { outcome: "denied", text: approval?.reason ? `denied: ${approval.reason}` : "denied" };
    default:
      return { outcome: "no-result", text: String(part.state) };
  }
}

/** Deny reasons being typed, by tool call id: a re-render (a transcript or annotations update)
 * rebuilds the card, and must not drop what the user typed. */
const typedReasons = new Map<string, string>();

const RISKS = ["low", "medium", "high"];

/** An action's approval descriptor (Think's `{summary, risk?, ...}`, kind approval-gated): its risk as a
 * badge beside the question, its summary on a line of its own. */
function actionDescriptor(box: HTMLElement, descriptor: unknown): void {
  const d = descriptor as { kind?: unknown; summary?: unknown; risk?: unknown } | undefined;
  if (d?.kind !== "approval-gated" && d?.kind !== "durable-pause") return;
  if (typeof d.risk === "string" && RISKS.includes(d.risk)) {
    const badge = h("span", "think-approval-risk", `${d.risk} risk`);
    badge.dataset.risk = d.risk;
    box.append(badge);
  }
  if (typeof d.summary === "string" && d.summary) box.append(h("div", "think-approval-summary", d.summary));
}

function approvalBox(part: ToolPart, ctx: MessageContext): HTMLElement {
  const box = h("div", "think-approval");
  const name = toolName(part);
  box.append(h("span", "think-approval-label", `Run ${name}?`));
  const descriptor = part.approval?.descriptor as { kind?: unknown; call?: { tool?: unknown; input?: unknown }; stdout?: unknown } | undefined;
  actionDescriptor(box, part.approval?.descriptor);
  if (descriptor?.kind === "execute" && descriptor.call) {
    // a gated tool called from execute's code: the code is paused at this call
    const call = h("div", "think-approval-call", `The code is paused at ${String(descriptor.call.tool)}(${JSON.stringify(descriptor.call.input ?? {})})`);
    box.append(call);
    if (typeof descriptor.stdout === "string" && descriptor.stdout) box.append(section("think-tool-output", "printed so far", descriptor.stdout));
  }
  const reason = h("input", "think-deny-reason");
  reason.placeholder = "reason (optional), Enter to deny";
  reason.dataset.focusKey = `deny-reason:${part.toolCallId}`; // render.ts gives focus back after a rebuild
  reason.value = typedReasons.get(part.toolCallId) ?? "";
  reason.addEventListener("input", () => typedReasons.set(part.toolCallId, reason.value));
  const approve = h("button", "think-approve", "Approve");
  const deny = h("button", "think-deny", "Deny");
  const answered = ctx.responded[part.toolCallId] === true;
  for (const el of [approve, deny, reason]) el.disabled = answered || ctx.offline === true;
  approve.addEventListener("click", () => {
    const input = isRunCode(part) ? editedInput(part) : undefined;
    if (isRunCode(part)) noteApproved(part, input);
    ctx.approve(part.toolCallId, input);
  });
  deny.addEventListener("click", () => ctx.deny(part.toolCallId, reason.value.trim()));
  reason.addEventListener("keydown", (e) => {
    // Enter submits the reason, as in a form (Shift/Ctrl/Alt/Meta+Enter and an IME's Enter do not)
    if (e.key !== "Enter" || e.shiftKey || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
    e.preventDefault();
    deny.click();
  });
  box.append(approve, deny, reason);
  return box;
}

function toolCard(
  part: ToolPart,
  rawInput: string | undefined,
  ctx: MessageContext,
  live: boolean,
  pending?: [number, number],
  othersWaiting = false,
): HTMLElement {
  const name = toolName(part);
  const card = h("details", "think-tool");
  const waiting = part.state === "approval-requested" || part.state === "input-streaming";
  // open where something needs seeing: a question, a failure, an image the tool returned
  card.open = waiting || part.state === "output-error" || part.state === "output-denied" ||
    (part.state === "output-available" && hasImages(part.output));
  card.dataset.toolName = name;
  card.dataset.state = part.state;
  card.dataset.key = `tool:${part.toolCallId}:${part.state}`; // a new state opens or closes it afresh
  const partial = part.state === "output-available" && part.preliminary === true;
  const running = live && (part.state === "input-streaming" || part.state === "input-available" || partial);
  if (running && !STARTED.has(part.toolCallId)) STARTED.set(part.toolCallId, Date.now());
  const started = STARTED.get(part.toolCallId) ?? Date.now();
  const label = toolLabel(part, {
    live,
    decision: ctx.decisions?.[part.toolCallId],
    responded: ctx.responded[part.toolCallId] === true,
    pending,
    elapsedMs: Date.now() - started,
    othersWaiting,
  });
  card.dataset.outcome = label.outcome;
  const badge = h("span", "think-tool-badge", label.text);
  badge.title = `state: ${part.state}`;
  if (running) badge.dataset.started = String(started); // render.ts ticks its elapsed time
  if (running && partial) badge.dataset.suffix = " — partial output";
  const summary = h("summary");
  summary.append(h("span", "think-tool-name", name));
  const server = ctx.toolServers?.[name];
  if (server) {
    card.dataset.server = server;
    const via = h("span", "think-tool-server", `MCP ${server}`);
    via.title = `from the MCP server ${server}`;
    summary.append(via);
  }
  summary.append(badge);
  card.append(summary);
  const input = part.state === "input-streaming" ? rawInput ?? "" : pretty(part.input);
  const code = part.state === "input-streaming" ? null : inputCode(part);
  if (part.state !== "input-streaming" && isRunCode(part)) {
    const run = runCodeSection(part, ctx.responded[part.toolCallId] === true);
    if (code !== null) run.append(intoCellBar(card, part.toolCallId, cellCode(part, code)));
    card.append(run);
  } else if (code !== null) {
    const div = h("div", "think-tool-input");
    div.append(h("div", "think-tool-label", "code"), codeBlock(code));
    card.append(div);
  } else card.append(section("think-tool-input", "input", input));
  if (part.state === "approval-requested") card.append(approvalBox(part, ctx));
  if (part.state === "output-available") {
    const what = partial ? "partial output" : label.outcome === "blocked" ? "reason (the tool did not run)" : label.outcome === "substituted" ? "output (from before_tool_call; the tool did not run)" : "output";
    const run = partial ? null : kernelRunOf(part.output);
    if (run) card.dataset.undone = String(run.undone);
    card.append(
      (run && kernelRunElement(part, run, ctx)) ?? tableOutputElement(part.output, what) ??
        contentOutputElement(part.output, what) ?? section("think-tool-output", what, pretty(part.output)),
    );
  }
  if (part.state === "output-error") card.append(section("think-tool-error", "error", part.errorText ?? "error"));
  if (part.state === "output-denied") {
    const why = part.approval?.reason ? `Denied: ${part.approval.reason}` : "The call was denied.";
    card.append(section("think-tool-error", "denied", why));
  }
  return card;
}

interface SubAgentData {
  agent?: string; // the storage key (Lead:lead/Researcher:r1)
  label?: string; // what the card shows: "Researcher · r1"
  request_id?: string;
  status?: string;
  text?: string;
  tools?: unknown;
}

function subAgentCard(part: { id?: unknown; data?: unknown }): HTMLElement {
  const data = (part.data && typeof part.data === "object" ? part.data : {}) as SubAgentData;
  const card = h("details", "think-subagent");
  card.dataset.key = `subagent:${String(part.id ?? "")}`;
  card.dataset.status = String(data.status ?? "");
  const summary = h("summary");
  summary.append(h("span", "think-subagent-name", `↳ ${data.label ?? data.agent ?? "sub-agent"}`), h("span", "think-tool-badge", data.status ?? ""));
  card.append(summary);
  if (data.text) card.append(textPart({ text: String(data.text) }));
  if (Array.isArray(data.tools) && data.tools.length) card.append(section("think-tool-input", "tools", pretty(data.tools)));
  return card;
}

/** `model · 6 output tokens · $0.000100` (this reply's output tokens; the turn's input + output on
 * hover); `model · usage unknown` when the provider reported none (usage.ts). */
function usageFooter(meta: Record<string, unknown> | undefined): HTMLElement | null {
  const usage = turnUsage(meta);
  if (!usage) return null;
  const text = formatTurnUsage(usage);
  const el = h("div", "think-usage", [typeof meta?.model === "string" ? meta.model : "", text.output, text.cost].filter(Boolean).join(" · "));
  el.dataset.source = usage.source;
  el.title = text.title;
  return el;
}

/** "cut at N tokens — continue?" under a reply that hit its token limit; under a stopped one the note an
 * interrupted one shows (`stoppedNote`), unless the message says it already (`said`). */
function endingNote(message: ViewMessage["message"], ctx: MessageContext, said: string | undefined): HTMLElement | null {
  const meta = message.metadata ?? {};
  if (meta.aborted === true) {
    const note = stoppedNote(message);
    return said === note ? null : h("div", "think-stopped", note);
  }
  const finish = ctx.finishReason ?? (typeof meta.finishReason === "string" ? meta.finishReason : undefined);
  if (finish !== "length") return null;
  const usage = turnUsage(meta);
  const at = usage?.completion != null ? `cut at ${usage.completion} tokens` : "cut at its token limit";
  const note = h("div", "think-cut", ctx.canContinue ? `${at} — continue?` : at);
  note.title = "The model stopped because it reached its output token limit (finish reason: length).";
  if (ctx.canContinue && ctx.continueTurn) {
    const go = h("button", "think-continue", "Continue");
    go.disabled = ctx.offline === true;
    go.addEventListener("click", () => ctx.continueTurn?.());
    note.append(" ", go);
  }
  return note;
}

export { INTERRUPTED_NOTE };
/** The same, under an interrupted reply that holds nothing (killed before the model sent anything). */
export const INTERRUPTED_EMPTY_NOTE = "The turn was interrupted before the model answered.";

/**
 * What a reply that ended before it finished says, however it ended: stopped (Stop, the kernel's
 * interrupt — a Kernel ▸ Restart interrupts the kernel before it shuts it down, so the new kernel
 * stores the reply `aborted`) or cut (the kernel went away under an open panel; recovery stores
 * it `interrupted`). One state, one wording: a panel open through a restart and the one drawn after
 * it say the same of the same reply.
 */
function stoppedNote(message: ViewMessage["message"]): string {
  return hasContent(message) ? INTERRUPTED_NOTE : INTERRUPTED_EMPTY_NOTE;
}

function hasContent(message: ViewMessage["message"]): boolean {
  return message.parts.some((p) => p.type !== "step-start" &&
    !((p.type === "text" || p.type === "reasoning") && !String((p as { text?: unknown }).text ?? "").trim()));
}

/** "‹ 2 / 3 ›": the versions of a regenerated (or forked: its label follows) reply. */
function versionsBar(message: ViewMessage["message"], ctx: MessageContext): HTMLElement | null {
  const v = ctx.versions;
  if (!v || v.count < 2) return null;
  const bar = h("div", "think-versions");
  const prev = h("button", "think-version-prev", "‹");
  const next = h("button", "think-version-next", "›");
  prev.title = "previous version";
  next.title = "next version";
  prev.disabled = !ctx.canSwitch || ctx.offline === true || v.index <= 0;
  next.disabled = !ctx.canSwitch || ctx.offline === true || v.index >= v.count - 1;
  prev.addEventListener("click", () => ctx.switchBranch?.(v.ids[v.index - 1]));
  next.addEventListener("click", () => ctx.switchBranch?.(v.ids[v.index + 1]));
  const where = h("span", "think-version-label", `${v.index + 1} / ${v.count}`);
  where.title = `version ${v.index + 1} of ${v.count} of this reply (Regenerate adds one)`;
  bar.dataset.messageId = message.id;
  bar.append(prev, where, next);
  const fork = forkLabel(message);
  if (fork) bar.append(h("span", "think-version-fork", fork));
  if (v.compare) bar.append(compareToggle(v.compare));
  return bar;
}

/** "compare": shows (or hides) the forked reply beside its original: the word diff, then the aspects that differ. */
function compareToggle(compare: NonNullable<Versions["compare"]>): HTMLElement {
  const wrap = h("span", "think-version-compare-wrap");
  const button = h("button", "think-version-compare", "compare");
  button.title = "this version beside the original it was forked from";
  const view = h("div", "think-compare");
  view.hidden = true;
  const diff = h("div", "think-compare-diff");
  for (const [op, words] of compare.diff) diff.append(op === "=" ? document.createTextNode(words) : h(op === "-" ? "del" : "ins", "", words));
  view.append(diff);
  if (compare.rows.length) {
    const table = h("table", "think-compare-rows");
    const head = h("tr", "");
    head.append(h("th", "", ""), h("th", "", "original"), h("th", "", "this version"));
    table.append(head);
    for (const row of compare.rows) {
      const tr = h("tr", "");
      tr.append(h("th", "", row.aspect), h("td", "", row.a), h("td", "", row.b));
      table.append(tr);
    }
    view.append(table);
  }
  button.addEventListener("click", () => { view.hidden = !view.hidden; });
  wrap.append(button, view);
  return wrap;
}

/** A forked reply's label (`agent.fork`: "forked at after_tool_call(add) — result edited"), else null. */
function forkLabel(message: ViewMessage["message"]): string | null {
  const fork = (message.metadata as { fork?: { label?: unknown } } | undefined)?.fork;
  return fork && typeof fork.label === "string" ? fork.label : null;
}

/**
 * The text and reasoning parts of a live message, by part index: each keeps its finished blocks rendered
 * (`StreamingMarkdown`). Held by the message's element, handed from one rendering to the next
 * (`messageElement`'s `previous`), so each view of the panel has its own and a finished message
 * lets them go.
 */
const STREAMS = new WeakMap<HTMLElement, Map<number, StreamingMarkdown>>();

/** The text (and reasoning) elements of a live message's element, by part index (patched in place while it streams). */
const TEXTS = new WeakMap<HTMLElement, Map<number, HTMLElement>>();

function textPart(part: { text: string; state?: string }, md?: StreamingMarkdown, div: HTMLElement = h("div", "think-text")): HTMLElement {
  if (md) {
    md.renderInto(div, part.text, growthOf(part)); // only the open tail block is rendered again
  } else {
    renderMarkdownInto(div, part.text);
  }
  if (part.state) div.dataset.state = part.state;
  else delete div.dataset.state;
  return div;
}

/** Reasoning, collapsed; while it streams (`md`), `det` is its element of the last frame, patched in place. */
function reasoningPart(part: { text: string; state?: string }, index: number, md?: StreamingMarkdown, det?: HTMLElement): HTMLElement {
  const text = det?.querySelector<HTMLElement>(":scope > .think-text");
  if (det && text) {
    textPart(part, md, text);
    return det;
  }
  const fresh = h("details", "think-reasoning");
  fresh.open = false; // reasoning is shown collapsed
  fresh.dataset.key = `reasoning:${index}`;
  fresh.append(h("summary", undefined, "Reasoning"), textPart(part, md));
  return fresh;
}

function link(cls: string, url: unknown, label: unknown): HTMLElement | null {
  if (typeof url !== "string" || !/^https?:/i.test(url)) return null;
  const a = h("a", cls, typeof label === "string" && label ? label : url);
  a.href = url;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

function streamOf(streams: Map<number, StreamingMarkdown> | undefined, index: number): StreamingMarkdown | undefined {
  if (!streams) return undefined;
  const md = streams.get(index) ?? new StreamingMarkdown();
  streams.set(index, md);
  return md;
}

function partElement(part: UIPart, index: number, view: ViewMessage, ctx: MessageContext, waiting: string[] = [],
                     streams?: Map<number, StreamingMarkdown>, texts?: Map<number, HTMLElement>): HTMLElement | null {
  if (isToolPart(part)) {
    const at = waiting.indexOf(part.toolCallId);
    const pending: [number, number] | undefined = at >= 0 ? [at + 1, waiting.length] : undefined;
    const unanswered = waiting.filter((id) => !ctx.responded[id]).length;
    return toolCard(part, view.rawInput?.[part.toolCallId], ctx, view.live, pending, unanswered > 0);
  }
  const p = part as Record<string, unknown>;
  switch (part.type) {
    case "text":
    {
      const md = streamOf(streams, index);
      const div = textPart(part as { text: string; state?: string }, md, md ? texts?.get(index) : undefined);
      if (md) texts?.set(index, div);
      return div;
    }
    case "reasoning":
    {
      const md = streamOf(streams, index);
      const det = reasoningPart(part as { text: string; state?: string }, index, md, md ? texts?.get(index) : undefined);
      if (md) texts?.set(index, det);
      return det;
    }
    case "source-url":
      return link("think-source", p.url, p.title);
    case "file":
      return filePartElement(p);
    case "data-subagent":
      return subAgentCard(p);
    case "data-context":
      return dataContextElement(p.data, index);
    default:
      return null; // step-start, other data-*, unknown parts: nothing to show
  }
}

/** The element for one message; `previous` (its last rendering) lends its open/closed details. */
export function messageElement(view: ViewMessage, ctx: MessageContext, previous?: HTMLElement): HTMLElement {
  const { message } = view;
  const el = h("div", "think-message");
  const children: HTMLElement[] = [];
  el.dataset.role = message.role;
  el.dataset.messageId = message.id;
  if (view.live) el.dataset.live = "true";
  const waiting = message.parts.filter((p) => isToolPart(p) && p.state === "approval-requested").map((p) => (p as ToolPart).toolCallId);
  // a live message's text keeps its finished blocks; its last rendering still reuses them
  const kept = previous ? STREAMS.get(previous) : undefined;
  const streams = view.live ? kept ?? new Map<number, StreamingMarkdown>() : kept;
  const texts = streams ? (previous && TEXTS.get(previous)) || new Map<number, HTMLElement>() : undefined;
  if (view.live && streams && texts) {
    STREAMS.set(el, streams);
    TEXTS.set(el, texts);
  }
  message.parts.forEach((part, i) => {
    const child = partElement(part, i, view, ctx, waiting, streams, texts);
    if (child) children.push(child);
  });
  // a failed turn's error is stored on its message (metadata.error), so reloaded views show it too;
  // so is an interruption (metadata.interrupted, set by recovery), even on a reply with no content
  const stored = message.metadata?.error;
  const interrupted = message.metadata?.interrupted !== true ? undefined
    : hasContent(message) ? INTERRUPTED_NOTE : INTERRUPTED_EMPTY_NOTE;
  // the replayed interruption (the kernel's error chunk) says the same as the stored flag: say it once, truly
  const replayed = view.errorText === INTERRUPTED_NOTE && interrupted ? interrupted : view.errorText;
  const errorText = replayed ?? (typeof stored === "string" ? stored : interrupted);
  if (errorText) children.push(h("div", "think-message-error", errorText));
  const ending = view.live ? null : view.stopped ? h("div", "think-stopped", INTERRUPTED_EMPTY_NOTE) : endingNote(message, ctx, errorText);
  if (ending) children.push(ending);
  const usage = view.live ? null : usageFooter(message.metadata);
  if (usage) children.push(usage);
  const versions = view.live ? null : versionsBar(message, ctx);
  if (versions) children.push(versions);
  if (ctx.canRegenerate) {
    const again = h("button", "think-regenerate", "Regenerate");
    again.disabled = ctx.offline === true;
    again.addEventListener("click", () => ctx.regenerate());
    children.push(again);
  }
  if (view.live && previous && kept) {
    // still streaming: patch the element on the page, so its finished text stays laid out
    keepOpenState(previous, children);
    for (const name of previous.getAttributeNames()) if (!el.hasAttribute(name)) previous.removeAttribute(name);
    for (const name of el.getAttributeNames()) previous.setAttribute(name, el.getAttribute(name) ?? "");
    reconcile(previous, children);
    return previous;
  }
  el.append(...children);
  if (previous) keepOpenState(previous, children);
  return el;
}

/** The new part elements `parts` open or close their keyed details as `previous` (the message's last rendering) had them. */
function keepOpenState(previous: HTMLElement, parts: Element[]): void {
  const open = new Map<string, boolean>();
  for (const d of keyedDetails(Array.from(previous.children))) open.set(d.dataset.key ?? "", d.open);
  for (const d of keyedDetails(parts)) {
    const was = open.get(d.dataset.key ?? "");
    if (was !== undefined) d.open = was;
  }
}

/** The `details[data-key]` of a message's part elements (markdown text holds none: it is not searched,
 * so a frame of a long streamed reply does not walk all of its text). */
function keyedDetails(parts: Element[]): HTMLDetailsElement[] {
  const out: HTMLDetailsElement[] = [];
  for (const part of parts) {
    if (part.classList.contains("think-text")) continue;
    if (part instanceof HTMLDetailsElement && part.dataset.key) out.push(part);
    out.push(...Array.from(part.querySelectorAll<HTMLDetailsElement>("details[data-key]")));
  }
  return out;
}

/**
 * Make `parent`'s children exactly `children`, moving as little as possible: nodes already in
 * place stay attached (the browser keeps their layout), the rest are inserted or removed.
 */
export function reconcile(parent: HTMLElement, children: Node[]): void {
  children.forEach((child, i) => {
    const current = parent.childNodes[i];
    if (current !== child) parent.insertBefore(child, current ?? null);
  });
  while (parent.childNodes.length > children.length) parent.lastChild?.remove();
}
