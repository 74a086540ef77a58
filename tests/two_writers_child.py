"""One of the two writers of `tests/test_two_writers.py`: runs N turns on agent Shared("one").

    python two_writers_child.py DB TAG N BARRIER_DIR

Waits until every writer has announced itself in BARRIER_DIR (a file per writer), so the two
processes' turns overlap, then sends "<TAG> <n>" for n in 0..N-1; each reply is "reply <TAG> <n>".
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from think_nb import Think
from think_nb.testing import ScriptedModel as S


async def main(db: str, tag: str, n: int, barrier: Path) -> None:
    script = S([[S.text(f"reply {tag} {i}")] for i in range(n)])

    class Shared(Think):
        def get_model(self) -> str:
            return script.model

    agent = Shared("one", db=db)
    (barrier / tag).touch()
    deadline = time.monotonic() + 60
    while len(os.listdir(barrier)) < 2:  # wait for the other writer (a condition, bounded)
        if time.monotonic() > deadline:
            raise SystemExit("the other writer never started")
        await asyncio.sleep(0.01)
    for i in range(n):
        result = await agent.send(f"{tag} {i}")
        if result.status != "completed":
            raise SystemExit(f"turn {i} ended {result.status}: {result.error}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])))
