// @vitest-environment happy-dom
/**
 * The protocol spec (think_nb/panel/protocol_spec.json) is what the panel uses: frame types,
 * statuses and trait names at run time, and — checked here with the TypeScript compiler —
 * the literal types spec.ts and widget.ts declare for them.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { createPanel, STATUS_LABEL } from "../src/render";
import { FRAME, STATUSES, TRAITS } from "../src/spec";
import { displayStatus, initialState, setStatus } from "../src/state";

const SRC = join(__dirname, "..", "src");
const SPEC = JSON.parse(readFileSync(join(__dirname, "..", "..", "think_nb", "panel", "protocol_spec.json"), "utf8")) as {
  frames: Record<string, string>;
  statuses: string[];
  traits: Record<string, string>;
};

/** The compiler's view of spec.ts and widget.ts, with js/tsconfig.json's options. */
function program(): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(join(__dirname, "..", "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  });
  if (!config) throw new Error("js/tsconfig.json did not parse");
  return ts.createProgram([join(SRC, "spec.ts"), join(SRC, "widget.ts")], config.options);
}

/** The type declared (interface or type alias) as `name` in src/`file`. */
function declaredType(p: ts.Program, file: string, name: string): ts.Type {
  const source = p.getSourceFile(join(SRC, file));
  const decl = source?.statements.find(
    (s): s is ts.InterfaceDeclaration | ts.TypeAliasDeclaration =>
      (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) && s.name.text === name,
  );
  if (!decl) throw new Error(`no type ${name} in ${file}`);
  return p.getTypeChecker().getTypeAtLocation(decl.name);
}

const literal = (t: ts.Type): unknown => (t.isStringLiteral() ? t.value : `<not a string literal: ${t.flags}>`);

// Type-checking the whole program ("compiles") takes 2-3 s, and 5-7 s on a loaded machine: past vitest's
// 5 s default, which failed about one full run in four. The timeout is a guard against hanging, not a measure.
describe("protocol spec", { timeout: 60_000 }, () => {
  const p = program();
  const checker = p.getTypeChecker();

  it("compiles", () => {
    expect(ts.getPreEmitDiagnostics(p).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))).toEqual([]);
  });

  it("gives the frame types at run time", () => {
    expect(FRAME).toEqual(SPEC.frames);
  });

  it("and the literal frame types the compiler narrows by are the spec's", () => {
    const props = declaredType(p, "spec.ts", "FrameTypes").getProperties();
    const types = Object.fromEntries(props.map((s) => [s.name, literal(checker.getTypeOfSymbol(s))]));
    expect(types).toEqual(SPEC.frames);
  });

  it("gives the statuses, whose literal types are the spec's", () => {
    expect(STATUSES).toEqual(SPEC.statuses);
    const union = declaredType(p, "spec.ts", "Status");
    expect((union.isUnion() ? union.types : [union]).map(literal).sort()).toEqual([...SPEC.statuses].sort());
  });

  it("names the traits widget.ts reads: the Traits interface is the spec's traits", () => {
    expect(TRAITS).toEqual(Object.values(SPEC.traits));
    const keys = declaredType(p, "widget.ts", "Traits").getProperties().map((s) => s.name);
    expect(keys.sort()).toEqual(Object.values(SPEC.traits).sort());
  });
});

describe("the statuses the panel shows", () => {
  it("are exactly the spec's: each is taken from the kernel, anything else is ignored", () => {
    for (const status of SPEC.statuses) expect(displayStatus(setStatus(initialState({ status: "error" }), status))).toBe(status);
    const before = initialState({ status: "streaming" });
    expect(setStatus(before, "thinking")).toBe(before);
  });

  it("each render into the status line, labelled only for spec statuses", () => {
    expect(Object.keys(STATUS_LABEL).every((s) => SPEC.statuses.includes(s))).toBe(true);
    const host = document.createElement("div");
    const panel = createPanel(host, { send() {}, stop() {}, clear() {}, regenerate() {}, approve() {}, deny() {}, switchSession() {}, continueTurn() {}, switchBranch() {} });
    for (const status of SPEC.statuses) {
      panel.update(setStatus(initialState(), status), { agentName: "calc", dbPath: "" });
      const root = host.querySelector<HTMLElement>("[data-status]");
      expect(root?.dataset.status).toBe(status);
      const label = STATUS_LABEL[status as keyof typeof STATUS_LABEL] ?? status;
      expect(host.querySelector(".think-status")?.textContent).toBe(label);
    }
    panel.destroy();
  });
});
