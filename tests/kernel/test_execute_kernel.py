"""The `execute` tool in real kernels: a run with three gated inner calls pauses, the kernel is
shut down, a new kernel approves (the run resumes from its stored Monty snapshot and pauses at
the next gated call), again, and a third kernel approves the last one. Each inner call runs
exactly once (a file outside the kernels counts them) and no snapshot is left afterwards."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from harness import start_frontend, stop_frontend

CODE = ("a = delete_file('/one')\nprint('one')\nb = delete_file('/two')\nprint('two')\n"
        "c = delete_file('/three')\n[a, b, c]")


def agent_cell(steps: str) -> str:
    return textwrap.dedent(f'''
        from pathlib import Path
        from think_nb import Think, tool
        from think_nb.testing import ScriptedModel as S
        from think_nb.workspace import execute_tool

        @tool(needs_approval=True)
        def delete_file(path: str) -> str:
            """Delete a file."""
            with open("deleted.log", "a") as log:
                log.write(path + "\\n")
            return f"deleted {{path}}"

        script = S({steps})

        class Coder(Think):
            def get_model(self):
                return script.model
            def get_tools(self):
                return [delete_file, execute_tool(self)]

        agent = Coder("coder", db=Path("coder.sqlite"))
        ''')


REPORT = textwrap.dedent('''
    import json
    from think_nb.binding import runtime_of
    part = agent.messages[1]["parts"][-1]
    print(json.dumps({"status": result.status, "state": part["state"], "output": part.get("output"),
                      "waiting_at": (part.get("approval") or {}).get("descriptor", {}).get("call"),
                      "ran": Path("deleted.log").read_text().split() if Path("deleted.log").exists() else [],
                      "pauses": runtime_of(agent).store.state.keys("tool-pause:")}))
    ''')


def in_new_kernel(workdir: Path, steps: str, action: str) -> dict:
    fe = start_frontend(workdir)
    try:
        fe.execute(agent_cell(steps)).check()
        fe.execute(f"result = await {action}", timeout=120).check()
        return json.loads(fe.execute(REPORT).check().stdout.strip().splitlines()[-1])
    finally:
        stop_frontend(fe)


def test_each_gated_inner_call_pauses_and_resumes_across_kernel_restarts(tmp_path: Path) -> None:
    code = json.dumps(CODE)
    first = in_new_kernel(tmp_path, f'[[S.tool_call("execute", {{"code": {code}}})]]', 'agent.send("go")')
    assert first == {"status": "completed", "state": "approval-requested", "output": None,
                     "waiting_at": {"tool": "delete_file", "input": {"path": "/one"}}, "ran": [],
                     "pauses": ["tool-pause:call_1_0"]}
    second = in_new_kernel(tmp_path, "[]", 'agent.approve("call_1_0")')
    assert second == {**first, "waiting_at": {"tool": "delete_file", "input": {"path": "/two"}}, "ran": ["/one"]}
    third = in_new_kernel(tmp_path, "[]", 'agent.approve("call_1_0")')
    assert third == {**first, "waiting_at": {"tool": "delete_file", "input": {"path": "/three"}},
                     "ran": ["/one", "/two"]}
    last = in_new_kernel(tmp_path, '[[S.text("All three.")]]', 'agent.approve("call_1_0")')
    assert last == {"status": "completed", "state": "output-available",
                    "output": {"result": ["deleted /one", "deleted /two", "deleted /three"],
                               "stdout": "one\ntwo\n", "calls": 3},
                    "waiting_at": {"tool": "delete_file", "input": {"path": "/three"}},
                    "ran": ["/one", "/two", "/three"], "pauses": []}
