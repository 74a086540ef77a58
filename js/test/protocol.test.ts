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
  it("are spelled only in src/protocol.ts", async () => {
    const { readdirSync, readFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const src = join(__dirname, "..", "src");
    const literal = new RegExp(Object.values(FRAME).map((t) => `["']${t}["']`).join("|"));
    const offenders = readdirSync(src).filter((f) => f !== "protocol.ts" && literal.test(readFileSync(join(src, f), "utf8")));
    expect(offenders).toEqual([]);
  });
});
