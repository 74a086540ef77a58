"""The guard every process think_nb starts runs under: `python -IS guard.py COMMAND [ARGS...]`.

Standard library only (it runs isolated, without site-packages, in about 15 ms). It makes its own
process group, forks COMMAND into it (the child has `PR_SET_PDEATHSIG` = SIGKILL, so it dies with
the guard), and then waits for whichever comes first:

- its owner (the process that started the guard: the kernel) exits, however it exits (normal
  shutdown, restart, SIGKILL): the guard kills its whole process group (COMMAND and everything
  COMMAND started) with SIGKILL;
- COMMAND exits: the guard exits with the same status, and a non-zero exit is also written to
  stderr as `think-nb: <command> exited with code N` (or `... was killed by SIGTERM`), which is
  where an MCP server's log shows why it stopped.

SIGTERM, SIGINT and SIGHUP sent to the guard are passed on to COMMAND, and so is a SIGTERM
`STDIN_GRACE_S` after COMMAND's stdin was closed by its writer if COMMAND has not exited by then
(the end of an MCP stdio session: a server that ignores its input ending stops at once). The owner is watched with
a pidfd (Linux >= 5.3), else by polling the parent PID every 0.2 s.
"""

import contextlib
import os
import select
import signal
import sys
import time

STDIN_GRACE_S = 0.5


def _pdeathsig() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the group kill below still applies
        pass


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("usage: guard.py COMMAND [ARGS...]\n")
        return 2
    owner = os.getppid()
    owner_fd = _pidfd(owner)
    if os.getppid() != owner or owner == 1:  # the owner died before it could be watched
        return 1
    if os.getpgid(0) != os.getpid():
        with contextlib.suppress(OSError):  # a session leader already leads its group
            os.setpgid(0, 0)
    guard = os.getpid()
    child = os.fork()
    if child == 0:
        _pdeathsig()
        if os.getppid() != guard:
            os._exit(1)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"think-nb: cannot start {argv[0]!r}: {exc.strerror or exc}\n")
            os._exit(127)
    # the guard holds no end of the child's stdout, and of its stdin only a duplicate it never reads,
    # to see the writer hang up: the pipes close when the child exits
    try:
        stdin: int | None = os.dup(0)
    except OSError:  # no stdin
        stdin = None
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)

    asked = []  # a signal was passed on: its exit is no news

    def forward(signum: int, _frame: object) -> None:
        asked.append(signum)
        with contextlib.suppress(OSError):
            os.kill(child, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    child_fd = _pidfd(child)
    poller = select.poll()
    for fd in (owner_fd, child_fd):
        if fd is not None:
            poller.register(fd, select.POLLIN)
    if stdin is not None:
        poller.register(stdin, 0)  # only POLLHUP/POLLERR: whoever fed the child's stdin closed it
    hung_up_at: float | None = None
    while True:
        wait_ms = None if owner_fd is not None and child_fd is not None else 200
        if hung_up_at is not None:
            wait_ms = 100 if wait_ms is None else min(wait_ms, 100)
        events = dict(poller.poll(wait_ms))
        if (owner_fd in events) if owner_fd is not None else os.getppid() != owner:
            os.killpg(0, signal.SIGKILL)  # the owner is gone: COMMAND's whole group goes with it
        if stdin is not None and stdin in events and hung_up_at is None:
            poller.unregister(stdin)
            hung_up_at = time.monotonic()
        if hung_up_at is not None and time.monotonic() - hung_up_at > STDIN_GRACE_S:
            forward(signal.SIGTERM, None)  # its input ended and it did not exit: the end of its session
            hung_up_at = None
        try:
            pid, status = os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            return 1
        if pid == child:
            break
    if os.WIFSIGNALED(status):
        killed_by = os.WTERMSIG(status)
        if not asked:
            sys.stderr.write(f"think-nb: {argv[0]} was killed by {signal.Signals(killed_by).name}\n")
        return 128 + killed_by
    code = os.WEXITSTATUS(status)
    if code and not asked:
        sys.stderr.write(f"think-nb: {argv[0]} exited with code {code}\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
