/**
 * The context tab: the agent's memory as the kernel's `session` frames describe it — the
 * active session (a select that switches), the token estimate against the compaction
 * threshold, and one card per context block (label, kind, description, tokens / max with a
 * usage bar, content in a collapsible).
 *
 * Below the blocks, the agent's MCP servers (Think's `cf_agent_mcp_servers`): one row per
 * server with its state, transport, tool count and last error (`updateMcp(servers)`).
 *
 * `blockUsage`, `sessionChoices` and `mcpSummary` are pure; `createContextTab(actions)` builds
 * the DOM and `update(memory)` / `updateMcp(servers)` redraw it only when the object changed
 * (the reducer replaces it on every frame). The user's switch goes out through `actions`.
 */
import type { McpServer, SessionBlock, SessionInfo, SessionState } from "./protocol";

export interface ContextActions {
  switchSession(id: string): void;
}

export interface BlockUsage {
  tokens: number;
  max: number | null;
  /** 0–100 (clamped), or null without a limit. */
  percent: number | null;
  text: string;
}

/** Tokens, limit and percent used of one block (percent from tokens/max when not given). */
export function blockUsage(block: SessionBlock): BlockUsage {
  const tokens = block.tokens ?? 0;
  const max = block.max_tokens ?? null;
  if (!max) return { tokens, max: null, percent: null, text: `${tokens} tokens` };
  const raw = block.percent_used ?? Math.round((1000 * tokens) / max) / 10;
  const percent = Math.max(0, Math.min(100, raw));
  return { tokens, max, percent, text: `${tokens} / ${max} tokens (${raw}%)` };
}

/** The options of the session select: `{value, label, selected}`, the active one selected. */
export function sessionChoices(memory: SessionState): { value: string; label: string; selected: boolean }[] {
  const listed: SessionInfo[] = memory.sessions?.length ? memory.sessions : [{ id: memory.session, active: true }];
  return listed.map((s) => ({
    value: s.id,
    label: s.name || s.id || "default",
    selected: s.id === memory.session,
  }));
}

/** The line a server row shows: "connected · stdio · 5 tools" (the error on its own line). */
export function mcpSummary(server: McpServer): string {
  const tools = server.tools ?? server.tool_names?.length ?? 0;
  const parts = [server.state, server.transport ?? "", server.state === "connected" ? `${tools} tool${tools === 1 ? "" : "s"}` : ""];
  return parts.filter(Boolean).join(" · ");
}

function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * One block's card. The `<details>` (summary and content) is built once per label and kept for
 * the card's life: a `session` frame updates it in place, so a click whose press and release
 * straddle a redraw still lands on the same summary (a rebuilt summary would lose the click:
 * the browser sends it to the common ancestor of the two targets instead).
 */
interface BlockView {
  card: HTMLElement;
  details: HTMLDetailsElement;
  summary: HTMLElement;
  text: HTMLPreElement;
}

function blockView(label: string, open: Set<string>): BlockView {
  const card = h("div", "think-context-block");
  card.dataset.label = label;
  const details = h("details", "think-context-content");
  details.open = open.has(label);
  details.addEventListener("toggle", () => (details.open ? open.add(label) : open.delete(label)));
  const summary = h("summary", "");
  // "toggle" fires a task after the click: record the user's choice synchronously on the click.
  summary.addEventListener("click", () => (details.open ? open.delete(label) : open.add(label)));
  const text = h("pre", "think-context-text");
  details.append(summary, text);
  card.append(details);
  return { card, details, summary, text };
}

/** Redraw a card's head, description and usage before its (kept) details; set the content. */
function fillBlock(view: BlockView, block: SessionBlock): void {
  const { card, details } = view;
  card.dataset.kind = block.kind ?? "";
  const head = h("div", "think-context-head");
  head.append(h("span", "think-context-label", block.label), h("span", "think-context-kind", block.kind ?? ""));
  if (block.writable && block.kind !== "writable") head.append(h("span", "think-context-kind", "writable"));
  const top: HTMLElement[] = [head];
  if (block.description) top.push(h("div", "think-context-description", block.description));
  const usage = blockUsage(block);
  const bar = h("div", "think-context-usage");
  const fill = h("div", "think-context-usage-fill");
  bar.dataset.percent = usage.percent === null ? "" : String(usage.percent);
  bar.title = usage.text;
  fill.style.width = `${usage.percent ?? 0}%`;
  if (usage.percent !== null && usage.percent >= 90) bar.dataset.level = "high";
  bar.append(fill);
  bar.hidden = usage.percent === null;
  top.push(bar, h("div", "think-context-tokens", usage.text));
  while (card.firstChild && card.firstChild !== details) card.firstChild.remove();
  details.before(...top);
  const summary = block.content ? "Content" : "Content (empty)";
  if (view.summary.textContent !== summary) view.summary.textContent = summary;
  const content = block.content ?? "";
  if (view.text.textContent !== content) view.text.textContent = content;
}

function serverElement(server: McpServer): HTMLElement {
  const row = h("div", "think-mcp-server");
  row.dataset.name = server.name;
  row.dataset.state = server.state;
  row.append(h("span", "think-mcp-name", server.name), h("span", "think-mcp-state", mcpSummary(server)));
  if (server.last_error) row.append(h("div", "think-mcp-error", server.last_error));
  if (server.tool_names?.length) row.title = server.tool_names.join(", ");
  return row;
}

export interface ContextTab {
  el: HTMLElement;
  update(memory: SessionState | null): void;
  updateMcp(servers: readonly McpServer[]): void;
}

export function createContextTab(actions: ContextActions): ContextTab {
  const el = h("div", "think-context");
  const bar = h("div", "think-context-bar");
  const label = h("label", "think-context-session-label", "Session ");
  const select = h("select", "think-session-select");
  label.append(select);
  const totals = h("span", "think-context-totals");
  bar.append(label, totals);
  const note = h("div", "think-context-note");
  const blocks = h("div", "think-context-blocks");
  const mcp = h("div", "think-mcp");
  const mcpTitle = h("div", "think-mcp-title", "MCP servers");
  const mcpList = h("div", "think-mcp-servers");
  mcp.append(mcpTitle, mcpList);
  mcp.hidden = true;
  el.append(bar, note, blocks, mcp);
  let lastMcp: readonly McpServer[] | undefined;
  const open = new Set<string>(); // labels whose content the user expanded
  const views = new Map<string, BlockView>(); // label → its card, kept across frames
  let last: SessionState | null | undefined;
  let lastChoices = "";
  select.addEventListener("change", () => actions.switchSession(select.value));

  return {
    el,
    updateMcp(servers) {
      if (servers === lastMcp) return;
      lastMcp = servers;
      mcp.hidden = servers.length === 0;
      mcpList.replaceChildren(...servers.map(serverElement));
    },
    update(memory) {
      if (memory === last) return;
      last = memory;
      if (!memory) {
        bar.hidden = true;
        blocks.replaceChildren();
        views.clear();
        note.textContent = "No session memory yet: it appears after the first turn or the first block write.";
        return;
      }
      bar.hidden = false;
      const choices = sessionChoices(memory);
      const key = JSON.stringify(choices);
      if (key !== lastChoices) {
        // Redrawn only when the sessions changed: an open dropdown survives the turn's frames.
        lastChoices = key;
        select.replaceChildren(
          ...choices.map((c) => {
            const option = h("option", "", c.label);
            option.value = c.value;
            option.selected = c.selected;
            return option;
          }),
        );
      }
      if (select.value !== memory.session) select.value = memory.session; // a refused switch snaps back
      el.dataset.session = memory.session;
      el.dataset.phase = memory.phase ?? "idle";
      const threshold = memory.tokenThreshold ? ` / compacts at ${memory.tokenThreshold}` : "";
      totals.textContent = `${memory.tokenEstimate ?? 0} tokens in context${threshold}${memory.phase === "compacting" ? " · compacting…" : ""}`;
      const notes = [];
      if (memory.compacted) notes.push(`Compacted: ${memory.compacted.tokensBefore} → ${memory.compacted.tokensAfter} tokens.`);
      if (memory.error) notes.push(memory.error);
      if (!memory.blocks.length) notes.push("No context blocks (configure_session adds them).");
      note.textContent = notes.join(" ");
      note.hidden = notes.length === 0;
      const cards = memory.blocks.map((block) => {
        let view = views.get(block.label);
        if (!view) views.set(block.label, (view = blockView(block.label, open)));
        fillBlock(view, block);
        return view.card;
      });
      const shown = new Set(memory.blocks.map((b) => b.label));
      for (const label of [...views.keys()]) if (!shown.has(label)) views.delete(label);
      const same = cards.length === blocks.children.length && cards.every((c, i) => blocks.children[i] === c);
      if (!same) blocks.replaceChildren(...cards); // only when blocks came, went or moved
    },
  };
}
