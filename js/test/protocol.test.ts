import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it, vi } from "vitest";
import { FRAME, frameError, parseFrame } from "../src/protocol";
import { loadFrames } from "./frames";

describe("golden frames", () => {
  const good = loadFrames(false);
  const bad = loadFrames(true);

  it("cover every frame type", () => {
    expect(new Set(good.map(([name]) => name.split("--")[0]))).toEqual(new Set(Object.values(FRAME)));
    expect(bad.length).toBeGreaterThanOrEqual(5);
  });

  it.each(good)("%s parses", (name, raw) => {
    const frame = parseFrame(raw);
    expect(frame).toEqual(raw);
    expect(frame?.type).toBe(name.split("--")[0]);
  });

  it.each(bad)("%s is rejected with a reason", (_name, raw) => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(frameError(raw)).toEqual(expect.any(String));
    expect(parseFrame(raw)).toBeNull();
    expect(warn).toHaveBeenCalledOnce();
    warn.mockRestore();
  });

  it.each([null, 3, "chat_clear", { type: "toString" }, { type: "__proto__" }])("rejects %j", (raw) => {
    expect(frameError(raw)).not.toBeNull();
  });
});

describe("frame type strings", () => {
  /** The string literals (and literal types) of a source file, as the compiler reads them. */
  function stringLiterals(path: string): string[] {
    const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest);
    const out: string[] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) out.push(node.text);
      ts.forEachChild(node, visit);
    };
    visit(source);
    return out;
  }

  it("are spelled only in src/spec.ts (the literal types of protocol_spec.json)", () => {
    const src = join(__dirname, "..", "src");
    const types = new Set<string>(Object.values(FRAME));
    const offenders = readdirSync(src).filter(
      (f) => f !== "spec.ts" && stringLiterals(join(src, f)).some((s) => types.has(s)),
    );
    expect(offenders).toEqual([]);
    expect(stringLiterals(join(src, "spec.ts")).filter((s) => types.has(s)).sort()).toEqual([...types].sort());
  });
});
