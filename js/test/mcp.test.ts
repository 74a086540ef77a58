// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from "vitest";
import { createContextTab, mcpSummary } from "../src/context-tab";
import { FRAME, type McpServersFrame, frameError } from "../src/protocol";
import { initialState, mcpToolServers, reduce } from "../src/state";
import { frame } from "./frames";
import { mount, unmountAll } from "./mount";

const golden = (): McpServersFrame => frame<McpServersFrame>("mcp_servers");
afterEach(unmountAll);

describe("MCP servers in the panel state", () => {
  it("an mcp_servers frame replaces the list; other frames keep it", () => {
    expect(frameError(golden())).toBeNull();
    const s = reduce(initialState(), golden());
    expect(s.mcp.map((m) => [m.name, m.state])).toEqual([["demo", "connected"], ["weather", "failed"]]);
    expect(reduce(s, { type: FRAME.CHAT_CLEAR }).mcp).toBe(s.mcp);
    expect(reduce(s, { type: FRAME.MCP_SERVERS, servers: [] }).mcp).toEqual([]);
  });

  it("maps each tool the model sees to its server", () => {
    expect(mcpToolServers(golden().servers)).toEqual({ demo_add: "demo", demo_echo_env: "demo" });
  });

  it("a server without a name or state is a malformed frame", () => {
    expect(frameError({ type: "mcp_servers", servers: [{ name: "x" }] })).toBe("a server has no string 'name' and 'state'");
    expect(frameError({ type: "mcp_servers", servers: [{ name: "x", state: "connected", tool_names: [1] }] })).toBe(
      "a server's 'tool_names' must be a list of strings",
    );
  });
});

describe("MCP servers in the context tab", () => {
  it("one row per server with state, transport, tool count and last error; hidden when none", () => {
    const tab = createContextTab({ switchSession: () => undefined });
    document.body.append(tab.el);
    const section = tab.el.querySelector<HTMLElement>(".think-mcp")!;
    tab.updateMcp([]);
    expect(section.hidden).toBe(true);
    tab.updateMcp(golden().servers);
    expect(section.hidden).toBe(false);
    const rows = Array.from(tab.el.querySelectorAll<HTMLElement>(".think-mcp-server"));
    expect(rows.map((r) => [r.dataset.name, r.dataset.state, r.querySelector(".think-mcp-state")?.textContent])).toEqual([
      ["demo", "connected", "connected · stdio · 2 tools"],
      ["weather", "failed", "failed · http"],
    ]);
    expect(rows[0].title).toBe("demo_add, demo_echo_env");
    expect(rows[0].querySelector(".think-mcp-error")).toBeNull();
    expect(rows[1].querySelector(".think-mcp-error")?.textContent).toBe("ConnectError: All connection attempts failed");
    expect(mcpSummary({ name: "one", state: "connected", tools: 1 })).toBe("connected · 1 tool");
  });
});

describe("MCP servers through the widget", () => {
  it("the context tab lists the servers and a tool card names the server its tool came from", async () => {
    const user = { id: "u1", role: "user", parts: [{ type: "text", text: "add" }] };
    const reply = {
      id: "a1",
      role: "assistant",
      parts: [
        { type: "tool-demo_add", toolCallId: "c1", state: "output-available", input: { a: 1, b: 2 }, output: 3 },
        { type: "tool-local", toolCallId: "c2", state: "output-available", input: {}, output: "x" },
      ],
    };
    const { model, el, probeId } = await mount({ agent_name: "calc", db_path: "/tmp/x.sqlite", messages: [user, reply] }, false);
    model.fromKernel(golden());
    model.fromKernel({ type: FRAME.STREAM_RESUME_NONE, probeId });
    const cards = Array.from(el.querySelectorAll<HTMLElement>(".think-tool"));
    expect(cards.map((c) => [c.dataset.toolName, c.dataset.server ?? null, c.querySelector(".think-tool-server")?.textContent ?? null])).toEqual([
      ["demo_add", "demo", "MCP demo"],
      ["local", null, null],
    ]);
    const rows = Array.from(el.querySelectorAll<HTMLElement>(".think-context .think-mcp-server"));
    expect(rows.map((r) => r.dataset.state)).toEqual(["connected", "failed"]);
  });
});
