"""Best-effort start-up in a real kernel (`think_nb.startup`): the cell that creates an agent whose
start-up step fails does not raise; its output shows the warning naming the step and the fix,
every time the cell runs."""

from __future__ import annotations

import textwrap

from harness import FakeFrontend

CELL = textwrap.dedent(
    '''
    from think_nb import Think

    class Broken(Think):
        def get_scheduled_tasks(self):
            raise RuntimeError("the task table is not ready")

    agent = Broken("b")
    print(agent.get_on_start_degradations()[0]["step"])
    '''
)


def test_a_failing_start_up_step_is_a_warning_in_the_cell_not_an_error(frontend: FakeFrontend) -> None:
    for _ in range(2):  # the same failure again is shown again
        out = frontend.execute(CELL, timeout=120).check()
        assert out.stdout == "scheduled-task-reconcile\n"
        assert "DegradedStartWarning: Broken:b: start-up step 'scheduled-task-reconcile' failed" in out.stderr
        assert "Broken.get_scheduled_tasks() raised RuntimeError: the task table is not ready" in out.stderr
        assert "fix get_scheduled_tasks() (or the file) and create the agent again" in out.stderr


def test_the_warning_names_the_users_cell_when_percent_think_made_the_agent(frontend: FakeFrontend) -> None:
    """`%think Broken` creates the agent inside IPython's magic machinery: the warning's place is
    still the user's cell (its line), not IPython's `interactiveshell.py`."""
    frontend.execute(CELL.replace('agent = Broken("b")\n', "").replace(
        'print(agent.get_on_start_degradations()[0]["step"])\n', ""), timeout=120).check()
    out = frontend.execute("%load_ext think_nb\n%think Broken", timeout=120).check()
    warning = out.stderr[:out.stderr.index("DegradedStartWarning")]
    assert "interactiveshell.py" not in warning and "think_nb" not in warning, out.stderr
    assert "ipykernel" in warning, out.stderr  # the cell's own file
