/**
 * Python source shown highlighted (highlight.js, Python only): `execute` and `run_code` cards.
 */
import hljs from "highlight.js/lib/core";
import python from "highlight.js/lib/languages/python";

hljs.registerLanguage("python", python);

/** Python source as a highlighted `<pre class="think-code"><code class="hljs language-python">`
 * (highlight.js escapes the text it marks up, so its HTML is safe to insert). */
export function codeBlock(code: string): HTMLElement {
  const pre = document.createElement("pre");
  pre.className = "think-code";
  const el = document.createElement("code");
  el.className = "hljs language-python";
  el.innerHTML = hljs.highlight(code, { language: "python", ignoreIllegals: true }).value;
  pre.append(el);
  return pre;
}
