// @vitest-environment jsdom
/**
 * Incremental rendering of a streamed reply (StreamingMarkdown) gives the same DOM as rendering
 * the whole text at every step, while rendering each finished block only once.
 */
import { describe, expect, it } from "vitest";
import { StreamingMarkdown, enhanceCodeBlocks, renderMarkdown } from "../src/markdown";
import { type MessageContext, messageElement } from "../src/parts";
import type { UIMessage } from "../src/ui-message";

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

describe("StreamingMarkdown", () => {
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

describe("a live message streamed into the panel (messageElement)", () => {
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
