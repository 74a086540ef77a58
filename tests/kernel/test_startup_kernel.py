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
