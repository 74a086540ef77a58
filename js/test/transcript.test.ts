/**
 * The transcript by message id (transcript.ts, state.ts): over random sequences of what the kernel does
 * to its branch (a turn appends, a tool result changes a message, regenerate or a branch switch moves the
 * leaf, clear, another session, a burst of messages), every view converges to exactly the kernel's branch:
 * one open from the start, one opened later from the traits, one that misses a frame (and resyncs), one
 * that scrolls back through older pages. The kernel's side is played by `Kernel`, which builds its frames
 * as think_nb/panel/transcript.py does (tests/kernel/test_transcript_kernel.py checks those frames over a
 * real kernel).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FRAME, type Frame, type TranscriptPage, type TranscriptPatch } from "../src/protocol";
import { type PanelState, initialState, loadingOlder, reduce, setWindow } from "../src/state";
import type { UIMessage } from "../src/ui-message";
import { type UsageTotals, usageTotals } from "../src/usage";

const WINDOW = 60; // think_nb/panel/transcript.py WINDOW

/** A deterministic PRNG (mulberry32), so a failing seed can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The kernel: a tree of messages, the branch to its leaf, and the frames a panel's views get. */
class Kernel {
  parent = new Map<string, string | null>();
  content = new Map<string, UIMessage>();
  leaf: string | null = null;
  rev = 0;
  heard: UIMessage[] = [];
  n = 0;

  branch(): UIMessage[] {
    const out: UIMessage[] = [];
    for (let id = this.leaf; id !== null; id = this.parent.get(id) ?? null) out.push(this.content.get(id)!);
    return out.reverse();
  }
  append(role: "user" | "assistant", under = this.leaf): void {
    const id = `m${this.n++}`;
    this.parent.set(id, under);
    this.content.set(id, { id, role, parts: [{ type: "text", text: `${role} ${id}` }] });
    this.leaf = id;
  }
  update(id: string): void {
    const m = this.content.get(id)!;
    this.content.set(id, { ...m, parts: [...m.parts, { type: "text", text: `edit ${this.n++}` }] });
  }
  /** The patch from what the views heard to the branch now (transcript.py TranscriptMirror.patch), or null. */
  patch(): TranscriptPatch | null {
    const now = this.branch();
    const heard = new Map(this.heard.map((m) => [m.id, m]));
    let anchor = now.length - 1;
    while (anchor >= 0 && !heard.has(now[anchor].id)) anchor--;
    const after = anchor >= 0 ? now[anchor].id : null;
    const tail = now.slice(anchor + 1);
    const updated = now.slice(0, anchor + 1).filter((m) => heard.get(m.id) !== m);
    const dropped = after === null ? this.heard.length > 0 : this.heard.at(-1)?.id !== after;
    if (!tail.length && !updated.length && !dropped) return null;
    const ids = this.heard.map((m) => m.id);
    const at = after === null ? -1 : ids.indexOf(after);
    const shown = after === null ? tail.length : Math.max(0, at - Math.max(0, ids.length - WINDOW) + 1) + tail.length;
    this.heard = now;
    const base = this.rev++;
    if (shown >= Math.min(now.length, WINDOW)) {
      return { type: FRAME.TRANSCRIPT_PATCH, rev: this.rev, base, after, messages: tail, updated };
    }
    const newest = now.slice(-WINDOW);
    return { type: FRAME.TRANSCRIPT_PATCH, rev: this.rev, base, after: null, messages: newest, updated: [], more: now.length > newest.length };
  }
  window(probeId: string): TranscriptPatch {
    const now = this.branch();
    const newest = now.slice(-WINDOW);
    return { type: FRAME.TRANSCRIPT_PATCH, rev: this.rev, base: this.rev, after: null, messages: newest, updated: [],
      more: now.length > newest.length, probeId };
  }
  page(probeId: string, before: string, limit: number): TranscriptPage {
    const now = this.branch();
    const at = now.findIndex((m) => m.id === before);
    const messages = at > 0 ? now.slice(Math.max(0, at - limit), at) : [];
    return { type: FRAME.TRANSCRIPT_PAGE, rev: this.rev, before, messages, more: at > limit, probeId };
  }
  /** One random thing the agent does to its branch. */
  step(r: () => number): void {
    const branch = this.branch();
    const x = r();
    if (x < 0.45 || branch.length < 2) {
      this.append("user");
      this.append("assistant");
    } else if (x < 0.65) {
      this.update(branch[Math.floor(r() * branch.length)].id);
    } else if (x < 0.8) { // regenerate / switch_branch: a new reply under an earlier user message
      const users = branch.filter((m) => m.role === "user");
      const user = users[Math.floor(r() * users.length)];
      if (user) this.append("assistant", user.id);
    } else if (x < 0.85) {
      this.leaf = null; // clear
    } else if (x < 0.9) { // another session: a different branch whose leaf is new
      this.leaf = null;
      for (let i = 0; i < 1 + Math.floor(r() * 4); i++) this.append(i % 2 ? "assistant" : "user");
    } else if (x < 0.95) { // another writer: a burst longer than a window
      for (let i = 0; i < WINDOW + 10; i++) this.append(i % 2 ? "assistant" : "user");
    } else if (branch.length) { // switch back to an older version: its leaf is an existing message
      const ids = [...this.content.keys()];
      this.leaf = ids[Math.floor(r() * ids.length)];
    }
  }
}

/** A view: its state and the frames it sends to the kernel. */
class View {
  state: PanelState;
  sent: Frame[] = [];
  constructor(readonly probeId: string, kernel: Kernel) {
    const now = kernel.heard; // the traits: what the last patch made (widget.py sets them as it sends it)
    this.state = setWindow(initialState({ probeId }), now.slice(-WINDOW), { rev: kernel.rev, more: now.length > WINDOW });
  }
  hear(frame: Frame): void {
    const resyncing = this.state.resyncing;
    this.state = reduce(this.state, frame);
    if (!resyncing && this.state.resyncing) this.sent.push({ type: FRAME.TRANSCRIPT_REQUEST, probeId: this.probeId });
  }
  askOlder(): void {
    const first = this.state.transcript[0];
    if (!this.state.more || this.state.loadingOlder || this.state.resyncing || !first) return;
    this.sent.push({ type: FRAME.TRANSCRIPT_REQUEST, probeId: this.probeId, before: first.id, limit: 25 });
    this.state = loadingOlder(this.state);
  }
}

/** What every view must hold: a run of the branch that ends at its leaf, at least the newest window,
 * and `more` exactly when older messages precede it. */
function expectConverged(view: View, kernel: Kernel, label: string): void {
  const branch = kernel.branch();
  const held = view.state.transcript;
  expect(held, label).toEqual(branch.slice(branch.length - held.length));
  expect(held.length, label).toBeGreaterThanOrEqual(Math.min(branch.length, WINDOW));
  expect(view.state.more, label).toBe(held.length < branch.length);
  expect(view.state.rev, label).toBe(kernel.rev);
}

describe("transcript patches (random sequences)", () => {
  it.each(Array.from({ length: 40 }, (_, i) => i + 1))("every view converges to the kernel's branch (seed %i)", (seed) => {
    const r = rng(seed);
    const kernel = new Kernel();
    const views = [new View("first", kernel)];
    const stale = new Set<View>(); // missed the last frame the kernel sent
    for (let step = 0; step < 60; step++) {
      kernel.step(r);
      if (step === 20) views.push(new View("later", kernel)); // opened from the traits as they are now
      const frame = kernel.patch();
      for (const view of views) {
        // "first" misses some frames (a page reloading while they pass): it finds out from the next one
        if (frame && view.probeId === "first" && step < 59 && r() < 0.15) stale.add(view);
        else if (frame) {
          view.hear(frame);
          stale.delete(view);
        }
        if (r() < 0.3) view.askOlder();
      }
      // the kernel answers what the views asked, in order (a pending change goes first, as widget.py does)
      for (const view of views) {
        for (const ask of view.sent.splice(0)) {
          if (ask.type !== FRAME.TRANSCRIPT_REQUEST) continue;
          const reply = ask.before ? kernel.page(ask.probeId, ask.before, ask.limit ?? 25) : kernel.window(ask.probeId);
          for (const v of views) v.hear(reply); // frames reach every view; only the asker applies it
        }
      }
      for (const view of views) if (!stale.has(view)) expectConverged(view, kernel, `seed ${seed} step ${step} view ${view.probeId}`);
    }
    // scrolled all the way back: the whole branch, nothing more to fetch
    const reader = views[0];
    for (let i = 0; i < 200 && reader.state.more; i++) {
      reader.askOlder();
      const ask = reader.sent.pop();
      if (ask?.type === FRAME.TRANSCRIPT_REQUEST && ask.before) reader.hear(kernel.page(ask.probeId, ask.before, 25));
    }
    expect(reader.state.transcript).toEqual(kernel.branch());
  });

  it("a patch that does not follow the view's revision is not applied: the view resyncs", () => {
    const kernel = new Kernel();
    const view = new View("v", kernel);
    kernel.append("user");
    kernel.patch(); // missed
    kernel.append("assistant");
    view.hear(kernel.patch()!);
    expect(view.state.resyncing).toBe(true);
    expect(view.state.transcript).toEqual([]);
    expect(view.sent).toEqual([{ type: FRAME.TRANSCRIPT_REQUEST, probeId: "v" }]);
    view.hear(kernel.window("other")); // another view's answer
    expect(view.state.resyncing).toBe(true);
    view.hear(kernel.window("v"));
    expect([view.state.resyncing, view.state.transcript]).toEqual([false, kernel.branch()]);
  });

  it("a page for what the view no longer holds is dropped", () => {
    const kernel = new Kernel();
    for (let i = 0; i < 80; i++) kernel.append(i % 2 ? "assistant" : "user");
    kernel.patch();
    const view = new View("v", kernel);
    view.askOlder();
    const page = kernel.page("v", view.state.transcript[0].id, 25);
    kernel.leaf = null;
    view.hear(kernel.patch()!); // cleared before the page arrived
    view.hear(page);
    expect([view.state.transcript, view.state.more, view.state.loadingOlder]).toEqual([[], false, false]);
  });
});

describe("usage totals", () => {
  // the kernel sends its totals over the whole branch (think_nb/panel/transcript.py usage_totals) while the
  // view holds only the newest messages: the same rules, on the fixture tests/test_transcript.py checks too
  const cases = JSON.parse(readFileSync(join(__dirname, "..", "..", "tests", "fixtures", "usage_totals.json"), "utf8")) as
    { name: string; messages: UIMessage[]; expected: UsageTotals }[];
  it.each(cases.map((c) => [c.name, c] as const))("%s: as the kernel counts", (_name, c) => {
    expect(usageTotals(c.messages)).toEqual(c.expected);
  });

  it("a patch's totals replace the view's; a patch without them keeps them", () => {
    const totals: UsageTotals = { turns: 3, tokens: 30, unknown: 0, cost: null, priced: 0 };
    let s = setWindow(initialState(), [], { rev: 0, more: true, usage: totals });
    expect(s.usage).toEqual(totals);
    s = reduce(s, { type: FRAME.TRANSCRIPT_PATCH, rev: 1, base: 0, after: null, messages: [], updated: [], more: true });
    expect(s.usage).toEqual(totals);
    const next = { ...totals, turns: 4, tokens: 41 };
    s = reduce(s, { type: FRAME.TRANSCRIPT_PATCH, rev: 2, base: 1, after: null, messages: [], updated: [], usage: next });
    expect(s.usage).toEqual(next);
  });
});
