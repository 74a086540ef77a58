// @vitest-environment jsdom
/** Data attached to a message and tables returned by tools render as sanitised, collapsible tables. */
import { describe, expect, it } from "vitest";
import { dataContextElement, tableOutputElement } from "../src/data-part";

const MARKDOWN = "dtypes: a: int64\n\n|    |   a |\n|---:|----:|\n|  0 |   1 |\n| … 8 more rows | … |\n|  9 |   2 |";

describe("data-context parts", () => {
  it("render as a collapsed details with a summary line and a table", () => {
    const el = dataContextElement({ name: "df", kind: "DataFrame", summary: "DataFrame, 10 rows × 1 columns", markdown: MARKDOWN, tokens: 42, truncated: true }, 1) as HTMLDetailsElement;
    expect(el.tagName).toBe("DETAILS");
    expect(el.open).toBe(false);
    expect(el.dataset).toMatchObject({ name: "df", key: "data:1:df", truncated: "true" });
    expect(el.querySelector("summary")?.textContent).toBe("df · DataFrame, 10 rows × 1 columns · 42 tokens");
    const rows = Array.from(el.querySelectorAll("tbody tr"), (tr) => Array.from(tr.children, (td) => td.textContent));
    expect(rows).toEqual([["0", "1"], ["… 8 more rows", "…"], ["9", "2"]]);
  });

  it("are nothing when the data has another shape", () => {
    expect(dataContextElement({ name: 3 }, 0)).toBeNull();
    expect(dataContextElement("text", 0)).toBeNull();
  });

  it("are sanitised like model text", () => {
    const el = dataContextElement({ name: "x", markdown: "| a |\n|---|\n| <img src=x onerror=alert(1)> |" }, 0) as HTMLElement;
    expect(el.querySelector("img, [onerror]")).toBeNull();
    expect(el.querySelector("td")?.textContent).toBe("<img src=x onerror=alert(1)>"); // shown as text
  });
});

describe("table outputs of tools", () => {
  it("render the table under the output label", () => {
    const el = tableOutputElement({ type: "table", kind: "DataFrame", shape: [10, 1], markdown: MARKDOWN, truncated: true }, "output") as HTMLElement;
    expect(el.className).toBe("think-tool-output");
    expect(el.querySelector(".think-tool-label")?.textContent).toBe("output");
    expect(el.querySelectorAll(".think-data-table tbody tr")).toHaveLength(3);
  });

  it("leave other outputs to the JSON view", () => {
    expect(tableOutputElement({ rows: [] }, "output")).toBeNull();
    expect(tableOutputElement([1, 2], "output")).toBeNull();
  });
});
