"""Turns: admission, the step loop over the model, tool execution and the turn's outcome.

- `result.py`: `TurnResult` (Think's `{requestId, status, error}`) and the step context.
- `admission.py`: one queue per agent; turns run one at a time, in order.
- `runner.py`: one turn: assemble, stream steps, run tools, persist, report.
- `tool_calls.py`: running the model's tool calls (errors become `output-error` parts).
"""

from think_nb.turns.result import StepContext, TurnResult

__all__ = ["StepContext", "TurnResult"]
