"""The Ray processes a kernel started die with it: `python -IS ray_reaper.py` (its owner is its parent).

`ray.init()` in a kernel starts a local cluster as the kernel's descendants: GCS, raylet, the
raylet's agents and workers (actors), a log monitor, an autoscaler monitor. Ray's own fate-sharing
(`PR_SET_PDEATHSIG` on what `ray.init` starts, and a raylet's workers following their raylet) was
measured here to leave processes behind when the kernel is SIGKILLed: the raylet's dashboard and
runtime-env agents were still alive, re-parented to init, minutes later
(tests/kernel/test_batch_ray_kernel.py). So `agent.map(engine="ray")` starts this reaper once, when
the cluster it uses was started by the kernel (`think_nb.batch.ray_engine`).

Standard library only, like `guard.py`. It watches its owner with a pidfd (else by polling the
parent PID) and, every `REFRESH_S`, notes the owner's descendants that are Ray's (a command line
under a `ray/` package folder, or a process title `ray::...`), with their start times. When the
owner exits, however it exits: it stops (SIGSTOP) each noted process that is still the same
process, adds any Ray process whose parent is one of them (started since the last look), and
SIGKILLs them all; then it exits. Stopped first, none of them can start another or be re-parented
away while the reaper looks.
"""

import contextlib
import os
import select
import signal
import sys

REFRESH_S = 0.25


def _stat(pid: int) -> tuple[int, int] | None:
    """`(parent pid, start time in clock ticks)` of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), int(fields[19])


def _is_ray(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ")
    except OSError:
        return False
    return command.startswith(b"ray::") or b"/ray/" in command


def _processes() -> dict[int, tuple[int, int]]:
    """Every live process: `{pid: (parent pid, start time)}`."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (info := _stat(int(name))) is not None:
            found[int(name)] = info
    return found


def _descendants(root: int, table: dict[int, tuple[int, int]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    out, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def _reap(noted: dict[int, int]) -> None:
    """Stop the noted processes that are still themselves, take in their Ray children, kill them all."""
    stopped: set[int] = set()
    while True:
        table = _processes()
        fresh = {pid for pid, started in noted.items()
                 if pid not in stopped and (table.get(pid) or (0, -1))[1] == started}
        fresh |= {pid for pid, (parent, _) in table.items()
                  if parent in stopped | fresh and pid not in stopped and _is_ray(pid)}
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= fresh
        noted.update({pid: table[pid][1] for pid in fresh if pid in table})
    for pid in stopped:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def main() -> int:
    owner = os.getppid()
    if owner == 1:
        return 1
    try:
        owner_fd: int | None = os.pidfd_open(owner)
    except (AttributeError, OSError):
        owner_fd = None
    if os.getppid() != owner:  # the owner died before it could be watched
        return 1
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # out of the owner's process group: a signal to that group is not for the reaper
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    poller = select.poll()
    if owner_fd is not None:
        poller.register(owner_fd, select.POLLIN)
    noted: dict[int, int] = {}
    while True:
        gone = bool(poller.poll(int(REFRESH_S * 1000))) if owner_fd is not None else os.getppid() != owner
        if gone or os.getppid() != owner:
            _reap(noted)
            return 0
        table = _processes()
        for pid in _descendants(owner, table):
            if pid not in noted and _is_ray(pid):
                noted[pid] = table[pid][1]
        noted = {pid: started for pid, started in noted.items() if (table.get(pid) or (0, -1))[1] == started}


if __name__ == "__main__":
    sys.exit(main())
