"""Session memory (Think's `Session`): context blocks rendered into the system prompt, the
tools the model uses on them, non-destructive compaction, FTS5 search, skills, and several
sessions per agent.

- `builder.py`: `Session`, the builder `configure_session` receives, and the runtime the turn
  seams call (prompt, tools, history); the prompt-freezing choice is explained there.
- `blocks.py`: `ContextBlock` and the prompt rendering. `providers.py`: provider kinds.
- `tools.py`: `set_context`, `load_context`, `unload_context`, `search_context`, `session_search`.
- `compaction.py`: overlays and the reference summariser. `search.py`: FTS5 over messages.
- `skills.py`: `Skill`, `SkillDirectory`, `activate_skill`/`read_skill_resource`.
- `sessions.py`: create/list/switch/rename/fork/delete. `tokens.py`: litellm token counts.
- `magic_commands.py`: `%think context|messages|search|sessions`.
"""

from think_nb.session.blocks import ContextBlock
from think_nb.session.builder import Session
from think_nb.session.compaction import CompactionContext, create_compact_function
from think_nb.session.providers import SqliteSearchProvider
from think_nb.session.skills import Skill, SkillDirectory

__all__ = ["CompactionContext", "ContextBlock", "Session", "Skill", "SkillDirectory", "SqliteSearchProvider",
           "create_compact_function"]
