"""Turns: the engine that runs an agent's turns, entry → admission → assemble → steps →
persist → respond.

- `engine.py`: `TurnEngine`, one per agent: entry points, queue, running tasks, approvals and
  client results, listeners; talks to the agent through `host.py`'s `AgentHost` protocol.
- `admission.py`: one queue per agent, `message_concurrency`, clear's generation.
- `assemble.py`: prompt, merged tools and history for a turn.
- `capabilities.py`: Think's capability block on the default system prompt.
- `runner.py`: one turn: `before_turn`, stream steps, run tools, persist, report.
- `tool_calls.py`: running the model's tool calls (errors become `output-error` parts).
- `steps.py`: `before_step` (`PrepareStepContext` → `StepConfig`) and `stop_when` conditions.
- `structured.py`: structured output (`output_type`): the hidden final-answer tool.
- `hooksite.py`: the one place hooks fire (traced, paused in step mode). `hooks.py`: contexts,
  `user_code`. `blame.py`: a failed turn's error names its source (model, user code, think_nb).
- `recorder.py`: the resumable stream, recorded for every turn. `recovery.py`: after a dead kernel.
- `broadcast.py`: listeners (views, terminal, `chat()`). `stepper.py`: step mode.
- `trace.py` / `replay.py`: hook traces, recordings, offline replay. `result.py`: `TurnResult`.
"""

from think_nb.turns.result import StepContext, TurnResult

__all__ = ["StepContext", "TurnResult"]
