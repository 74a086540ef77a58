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

from think_nb.lazy import attach as _attach

TYPE_CHECKING = False  # not typing's (see think_nb/__init__.py)
if TYPE_CHECKING:
    from think_nb.session.blocks import ContextBlock
    from think_nb.session.builder import Session
    from think_nb.session.compaction import CompactionContext, create_compact_function
    from think_nb.session.providers import SqliteSearchProvider
    from think_nb.session.skills import Skill, SkillDirectory

_LAZY = {"ContextBlock": ".blocks", "Session": ".builder", "CompactionContext": ".compaction",
         "create_compact_function": ".compaction", "SqliteSearchProvider": ".providers", "Skill": ".skills",
         "SkillDirectory": ".skills"}
"""The public names load on first access (`think_nb.lazy`): a turn imports only the session modules it
uses (`builder`, `compaction`, `skills`), not blocks, providers or search (issue 29 §3)."""

__all__ = ["CompactionContext", "ContextBlock", "Session", "Skill", "SkillDirectory", "SqliteSearchProvider",
           "create_compact_function"]

__getattr__ = _attach(__name__, _LAZY)
