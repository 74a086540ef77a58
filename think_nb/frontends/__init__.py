"""The ways a person reaches an agent besides the panel: the `%think` magics (`magic/`), the
terminal (`cli.py`, `terminal.py`), marimo's chat element (`marimo_chat.py`), the pandas DataFrames
of an agent's state (`views.py`) and exports (`export.py`). They sit above `think_nb.agent` and use
its public methods, and `think_nb.binding.runtime_of` for what only the machinery knows."""
