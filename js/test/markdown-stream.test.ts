// @vitest-environment jsdom
/**
 * Incremental rendering of a streamed reply (StreamingMarkdown) gives the same DOM as rendering
 * the whole text at every step, while rendering each finished block only once; in an element
 * (`renderInto`) its blocks are grouped in chunks as a whole render groups them (`renderMarkdownInto`).
 */
import { describe, expect, it } from "vitest";
import { type LiveTurn, applyChunks, growthOf, newTurn } from "../src/accumulate";
import { CHUNK, StreamingMarkdown, enhanceCodeBlocks, renderMarkdown, renderMarkdownInto } from "../src/markdown";
import { type MessageContext, messageElement } from "../src/parts";
import type { UIMessage } from "../src/ui-message";

/** jsdom renders slowly on a loaded machine: the tests that render a long text many times get room
 * (a guard against hanging, not a measure). */
const SLOW = { timeout: 60_000 };

function full(text: string): string {
  const div = document.createElement("div");
  div.innerHTML = renderMarkdown(text);
  enhanceCodeBlocks(div);
  return div.innerHTML;
}

function incremental(md: StreamingMarkdown, text: string): string {
  const div = document.createElement("div");
  div.append(...md.render(text));
  return div.innerHTML;
}

const DOCS: Record<string, string> = {
  paragraphs: "First paragraph with **bold** and `code`.\n\nSecond one\ncontinues here.\n\nThird.",
  headings: "# Title\n\nSetext\n===\n\npara\n---\n\n## Sub\ntext",
  lists: "- a\n- b\n\n- loose c\n\n1. one\n2. two\n\n   indented para in two\n\nafter the list\n\n* other bullet\n+ another",
  code: "Intro:\n\n```python\ndef f():\n\n    return 1\n```\n\n    indented code\n\n    more\n\n~~~\nunclosed fence until the end\n\nstill code",
  quotes: "> quote\nlazy continuation\n\n> second\n> > nested\n\nend",
  tables: "| a | b |\n|---|--:|\n| 1 | 2 |\n| 3 | 4 |\n\ntext after\n\nx | y\n--|--\n5 | 6",
  mixed: "Text\n***\n- list\ninterrupting\n\n# h\n```\nfence right after heading\n```\nline after fence\n<div>raw html</div>\n\n[link](https://example.com) https://auto.link",
  references: "See [the docs][d] first.\n\nMore text.\n\n[d]: https://example.com/docs",
};

function chunked(text: string, seed: number): number[] {
  const cuts: number[] = [];
  let at = 0;
  let x = seed;
  while (at < text.length) {
    x = (x * 1103515245 + 12345) % 2147483648;
    at = Math.min(text.length, at + 1 + (x % 7));
    cuts.push(at);
  }
  return cuts;
}

describe("StreamingMarkdown", SLOW, () => {
  for (const [name, doc] of Object.entries(DOCS)) {
    it(`renders ${name} like a full render at every step`, () => {
      for (const seed of [1, 2, 3]) {
        const md = new StreamingMarkdown();
        for (const end of chunked(doc, seed)) {
          const text = doc.slice(0, end);
          expect(incremental(md, text), `${name} at ${end}: ${JSON.stringify(text)}`).toBe(full(text));
        }
      }
    });
  }

  it("renders finished blocks once: the rendered tail stays small while the text grows", () => {
    const md = new StreamingMarkdown();
    let text = "";
    for (let i = 0; i < 200; i++) {
      text += `Paragraph ${i} with some words in it.\n\n`;
      md.render(text);
    }
    expect(md.finished).toBeGreaterThan(text.length - 40);
    expect(incremental(md, text)).toBe(full(text));
  });

  it("keeps its finished blocks once a reference definition is complete, and renders them again when one changes", () => {
    const md = new StreamingMarkdown();
    const head = "See [the docs][d] and [e].\n\n[d]: https://example.com/docs\n\n";
    const first = md.render(`${head}para 1\n\n`)[0];
    expect(md.render(`${head}para 1\n\npara 2\n\nmore`)[0]).toBe(first); // rendered once
    const text = `${head}para 1\n\npara 2\n\nmore\n\n[e]: https://example.com/e\n\nafter`;
    const again = md.render(text);
    expect(again[0]).not.toBe(first); // [e] is a link now
    expect(incremental(md, text)).toBe(full(text));
    expect((again[0] as Element).querySelectorAll("a")).toHaveLength(2);
  });

  it("reuses the nodes of finished blocks", () => {
    const md = new StreamingMarkdown();
    const first = md.render("one\n\ntwo");
    const second = md.render("one\n\ntwo and more\n\nthree");
    expect(second[0]).toBe(first[0]);
  });

  it("starts over when the text is not a continuation", () => {
    const md = new StreamingMarkdown();
    md.render("alpha\n\nbeta");
    expect(incremental(md, "gamma\n\ndelta")).toBe(full("gamma\n\ndelta"));
  });
});

describe("a live message streamed into the panel (messageElement)", SLOW, () => {
  const ctx: MessageContext = {
    approve: () => {}, deny: () => {}, regenerate: () => {}, responded: {}, canRegenerate: false,
  };
  const message = (text: string): UIMessage => ({ id: "m1", role: "assistant", parts: [{ type: "step-start" }, { type: "text", text }] });

  it("is patched in place, keeps its finished blocks' nodes, and ends as the full rendering", () => {
    const doc = Object.values(DOCS).filter((d) => !d.includes("[d]:")).join("\n\n");
    let el: HTMLElement | undefined;
    let firstBlock: Node | undefined;
    for (const end of chunked(doc, 5)) {
      const next = messageElement({ message: message(doc.slice(0, end)), live: true }, ctx, el);
      if (el) expect(next).toBe(el); // the same element on the page
      el = next;
      const fresh = messageElement({ message: message(doc.slice(0, end)), live: true }, ctx);
      expect(el.innerHTML).toBe(fresh.innerHTML);
      firstBlock ??= end > 60 ? el.querySelector(".think-text")?.firstChild ?? undefined : undefined;
    }
    expect(el?.querySelector(".think-text")?.firstChild).toBe(firstBlock); // rendered once, never replaced
    const done = messageElement({ message: message(doc), live: false }, ctx, el);
    expect(done.innerHTML).toBe(messageElement({ message: message(doc), live: false }, ctx).innerHTML);
  });
});

/** What a finished message's text element holds for `text` (blocks grouped in chunks). */
function whole(text: string): string {
  const div = document.createElement("div");
  renderMarkdownInto(div, text);
  return div.innerHTML;
}

/** A reply long enough for several chunks: paragraphs, lists, code, headings, a table, quotes. */
const LONG = Array.from({ length: 90 }, (_, i) => {
  switch (i % 6) {
    case 0: return `## Part ${i}`;
    case 1: return `- item ${i}\n- another *item*\n\n  loose para in the list`;
    case 2: return "```js\nconst x = " + i + ";\n\nconsole.log(x);\n```";
    case 3: return `| a | b |\n|---|---|\n| ${i} | ${i + 1} |`;
    case 4: return `> quoted ${i}\nlazy line`;
    default: return `Paragraph ${i} with **bold**, \`code\` and https://example.com/${i}.`;
  }
}).join("\n\n");

/** Reference definitions arriving late (one in a quote), used from the first block on. */
const LATE_REFERENCE = `See [the docs][d] and [q].\n\n${LONG}\n\n[d]: https://example.com/docs\n\n> [q]: https://example.com/q "Q"\n\nafter [d]`;

/** Code fences opened in one frame and closed many frames later (big cuts). */
const FENCES = Array.from({ length: 40 }, (_, i) => "```\n" + "line\n\n".repeat(i % 7) + "```\ntext " + i).join("\n\n");

function bigCuts(text: string, seed: number): number[] {
  return chunked(text, seed).filter((_, i) => i % 23 === 0).concat([text.length]);
}

describe("StreamingMarkdown.renderInto", SLOW, () => {
  for (const [name, doc] of Object.entries({ long: LONG, "late reference": LATE_REFERENCE, fences: FENCES, ...DOCS })) {
    it(`${name}: the element holds what a whole render holds, at every step`, () => {
      for (const seed of name in DOCS ? [1, 2] : [1]) {
        const md = new StreamingMarkdown();
        const div = document.createElement("div");
        for (const end of name in DOCS ? chunked(doc, seed) : bigCuts(doc, seed)) {
          const text = doc.slice(0, end);
          md.renderInto(div, text);
          expect(div.innerHTML, `${name} at ${end}`).toBe(whole(text));
        }
      }
    });
  }

  it("groups every full run of CHUNK top-level nodes in a div.think-chunk, the rest loose", () => {
    const div = document.createElement("div");
    renderMarkdownInto(div, Array.from({ length: 100 }, (_, i) => `p${i}`).join("\n\n"));
    const nodes = 200; // 100 paragraphs, each followed by a newline text node
    const chunks = Array.from(div.children).filter((c) => c.classList.contains("think-chunk"));
    expect(chunks).toHaveLength(Math.floor(nodes / CHUNK));
    for (const chunk of chunks) expect(chunk.childNodes).toHaveLength(CHUNK);
    expect(div.childNodes).toHaveLength(chunks.length + (nodes % CHUNK));
    const small = document.createElement("div");
    renderMarkdownInto(small, "one\n\ntwo");
    expect(small.querySelector(".think-chunk")).toBeNull(); // a short text is not wrapped
  });

  it("keeps its chunks of finished blocks in place while the text grows", () => {
    const md = new StreamingMarkdown();
    const div = document.createElement("div");
    let first: Element | undefined;
    for (const end of bigCuts(LONG, 3)) {
      md.renderInto(div, LONG.slice(0, end));
      const chunk = div.querySelector(".think-chunk") ?? undefined;
      if (first && md.finished > 0) expect(chunk).toBe(first);
      if (chunk && md.finished >= LONG.length / 2) first ??= chunk;
    }
    expect(first).toBeDefined();
  });

  it("takes the new text from the accumulator's growth, and falls back to the text when a frame was missed", () => {
    const md = new StreamingMarkdown();
    const div = document.createElement("div");
    let turn: LiveTurn = applyChunks(newTurn("r", false), [{ type: "text-start", id: "t" }]);
    const cuts = bigCuts(LONG, 4);
    let at = 0;
    cuts.forEach((end, i) => {
      turn = applyChunks(turn, [{ type: "text-delta", id: "t", delta: LONG.slice(at, end) }]);
      at = end;
      const part = turn.message.parts[0] as { text: string };
      expect(growthOf(part)?.added).toBe(LONG.slice(at - (end - (cuts[i - 1] ?? 0)), end));
      if (i % 5 === 4) return; // this frame is not drawn: the next one reads the whole text
      md.renderInto(div, part.text, growthOf(part));
      expect(div.innerHTML, `at ${end}`).toBe(whole(part.text));
    });
  });

  it("a turn state reduced twice starts a new stream: texts of one stream stay prefixes of each other", () => {
    const start = applyChunks(newTurn("r", false), [{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "one\n\n" }]);
    const a = applyChunks(start, [{ type: "text-delta", id: "t", delta: "two" }]).message.parts[0];
    const b = applyChunks(start, [{ type: "text-delta", id: "t", delta: "three" }]).message.parts[0];
    const c = applyChunks(applyChunks(start, [{ type: "text-delta", id: "t", delta: "" }]), [{ type: "text-delta", id: "t", delta: "x" }]).message.parts[0];
    expect(growthOf(a)?.stream).toBe(growthOf(start.message.parts[0])?.stream);
    expect(growthOf(b)?.stream).not.toBe(growthOf(a)?.stream);
    const md = new StreamingMarkdown();
    const div = document.createElement("div");
    for (const part of [a, b, c] as { text: string }[]) {
      md.renderInto(div, part.text, growthOf(part));
      expect(div.innerHTML).toBe(whole(part.text));
    }
  });
});

describe("a live message's details (reasoning, tool cards) keep the state the user gave them", SLOW, () => {
  const ctx: MessageContext = {
    approve: () => {}, deny: () => {}, regenerate: () => {}, responded: {}, canRegenerate: false,
  };
  it("while the text streams and once it is done", () => {
    const parts = (text: string) => [
      { type: "reasoning", text: "thinking about it", state: "done" },
      { type: "tool-search", toolCallId: "c1", state: "output-available", input: { q: "x" }, output: "found" },
      { type: "text", text },
    ] as UIMessage["parts"];
    const msg = (text: string): UIMessage => ({ id: "m1", role: "assistant", parts: parts(text) });
    let el = messageElement({ message: msg("Hello"), live: true }, ctx);
    const reasoning = () => el.querySelector<HTMLDetailsElement>("details.think-reasoning")!;
    const tool = () => el.querySelector<HTMLDetailsElement>("details.think-tool")!;
    const toolWas = tool().open;
    reasoning().open = true;
    tool().open = !toolWas;
    for (const end of bigCuts(LONG, 6)) {
      el = messageElement({ message: msg(LONG.slice(0, end)), live: true }, ctx, el);
      expect(reasoning().open).toBe(true);
      expect(tool().open).toBe(!toolWas);
    }
    el = messageElement({ message: msg(LONG), live: false }, ctx, el);
    expect(reasoning().open).toBe(true);
    expect(tool().open).toBe(!toolWas);
    expect(el.querySelector(":scope > .think-text")?.innerHTML).toBe(whole(LONG));
  });
});

describe("a live message's reasoning streamed into the panel", SLOW, () => {
  const ctx: MessageContext = {
    approve: () => {}, deny: () => {}, regenerate: () => {}, responded: {}, canRegenerate: false,
  };
  it("is patched in place like its text: the same details, finished blocks kept, the full rendering at every step", () => {
    const msg = (reasoning: string, text: string): UIMessage => ({ id: "m1", role: "assistant", parts: [
      { type: "reasoning", text: reasoning, state: text ? "done" : "streaming" }, { type: "text", text }] });
    let el: HTMLElement | undefined;
    let det: HTMLDetailsElement | undefined;
    let first: Node | undefined;
    for (const end of bigCuts(LONG, 7)) {
      const message = msg(LONG.slice(0, end), end === LONG.length ? "Answer." : "");
      el = messageElement({ message, live: true }, ctx, el);
      det ??= el.querySelector<HTMLDetailsElement>("details.think-reasoning") ?? undefined;
      expect(el.querySelector("details.think-reasoning")).toBe(det);
      expect(el.innerHTML).toBe(messageElement({ message, live: true }, ctx).innerHTML);
      first ??= end > LONG.length / 2 ? det?.querySelector(".think-text")?.firstChild ?? undefined : undefined;
    }
    expect(det?.querySelector(".think-text")?.firstChild).toBe(first);
    const done = messageElement({ message: msg(LONG, "Answer."), live: false }, ctx, el);
    expect(done.innerHTML).toBe(messageElement({ message: msg(LONG, "Answer."), live: false }, ctx).innerHTML);
  });
});
