"""`%think` and `%%think`: the IPython magics (`core.py`: `ThinkMagics`, `register`), their
sub-commands declared in one table (`commands.py`), grouped by concept (`turns.py`: step, trace,
schedules, export; `memory.py`: context, messages, search, sessions; `files.py`), and what they
share (`base.py`: the parser, the agents shown, finding the agent a sub-command names)."""
