"""`TranscriptMirror`: what one chat panel's views were told of the branch, and the patch to the branch now.

The transcript reaches a panel's views in three ways (frames of `think_nb.panel.protocol`):

- on open, the newest `WINDOW` messages of the branch: the `messages` trait, with the `transcript`
  trait `{rev, more, usage}` (kept current in the kernel without being synced on each change once a view
  attached, so a reloaded page reads them as they are now; a view that attaches on an older ``rev`` gets
  the window first; ``usage``: the header's totals over the whole branch, `usage_totals`);
- after every change, one ``transcript_patch`` frame keyed by message id, as big as what changed:
  ``after`` (the newest message the old and new branch share: the views keep their messages up to it;
  None: they keep none — a clear, another session, or a change that would leave a view holding only
  the last window with fewer than a window's messages: they get the newest window), ``messages``
  (the branch after it, in order), ``updated`` (new versions of messages kept), and ``base`` → ``rev``
  (the revision it applies to and the one it makes: a view whose revision is not ``base`` missed a frame
  and asks for the window again);
- on request (``transcript_request`` from one view, ``probeId``): the newest window again, as a
  ``transcript_patch`` for that view only, or (``before``: a message id) a ``transcript_page`` of the
  older messages before it (scrolling up), from the branch in memory, then from SQLite past it.

A message counts as changed when it is not equal to the one heard. What was heard is kept by reference
for a final message (`think_nb.messages.final`: nothing changes it in place any more, so the usual check
is one identity test) and as a copy for the few others (the engine moves an open part on in place: an
approval, a client tool's result), so a turn that appended two messages costs little per message of the
branch, and nothing is sent twice.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from think_nb.messages.final import is_final
from think_nb.panel import protocol
from think_nb.panel.protocol import UIMessage

__all__ = ["PAGE", "WINDOW", "TranscriptMirror", "usage_totals"]

WINDOW = 60
"""Messages a view gets when it opens (the newest; older ones are fetched when the list is scrolled up)."""
PAGE = 100
"""Most messages one ``transcript_page`` holds."""


class TranscriptMirror:
    """The branch as a panel's views last heard it: ids in order, the message object heard for each,
    the usage totals of each prefix, and the revision (see the module docstring)."""

    def __init__(self, messages: list[UIMessage]) -> None:
        self.rev = 0
        self._ids: list[str] = []
        self._objs: list[UIMessage] = []  # what was heard, by position (final messages by reference)
        self._heard: dict[str, UIMessage] = {}
        self._sums: list[_Totals] = [_ZERO]  # usage totals of the first i messages heard
        self._remember(messages, 0)

    @property
    def _usage(self) -> dict[str, Any]:
        return _as_dict(self._sums[-1])

    def _remember(self, messages: list[UIMessage], same: int) -> None:
        """`messages` is what the views heard now; its first `same` messages were heard already, unchanged."""
        for key in self._ids[same:]:
            self._heard.pop(key, None)
        suffix = messages[same:]
        ids = [str(m.get("id")) for m in suffix]
        kept = [_keep(m) for m in suffix]
        self._ids[same:], self._objs[same:] = ids, kept
        self._heard.update(zip(ids, kept, strict=True))
        sums = self._sums[:same + 1]
        for m in suffix:
            sums.append(_add(sums[-1], m))
        self._sums = sums

    def _same_prefix(self, messages: list[UIMessage]) -> int:
        """How many leading messages are the ones heard, unchanged. The lists are compared by slices (in
        C: an identity test per final message), halving the compared prefix from the end until it matches,
        so a turn's work is the few messages at the end, whatever the branch's length."""
        objs = self._objs
        n = min(len(messages), len(objs))
        k = 4
        while k < n and messages[:n - k] != objs[:n - k]:
            k *= 2
        i = max(0, n - k)
        while i < n and not _changed(objs[i], messages[i]):
            i += 1
        return i

    def patch(self, messages: list[UIMessage], older: bool = False) -> protocol.TranscriptPatch | None:
        """The ``transcript_patch`` frame from what the views heard to `messages` (the branch now,
        oldest first), or None when nothing changed; `older`: messages precede `messages[0]` (in SQLite)."""
        same = self._same_prefix(messages)
        if same == len(self._ids) == len(messages):
            return None
        heard = self._heard
        anchor = len(messages) - 1
        while anchor >= same and str(messages[anchor].get("id")) not in heard:
            anchor -= 1
        after = str(messages[anchor]["id"]) if anchor >= 0 else None
        tail = messages[anchor + 1:]
        updated = [m for m in messages[same:anchor + 1] if _changed(heard.get(str(m.get("id"))), m)]
        shown = self._shown_after(after, len(tail))
        old_usage = self._sums[-1]
        self._remember(messages, same)
        base, self.rev = self.rev, self.rev + 1
        usage = self._usage
        if shown >= min(len(messages), WINDOW):
            return protocol.transcript_patch(self.rev, base, after, tail, updated,
                                             usage=usage if self._sums[-1] != old_usage else None)
        newest = messages[-WINDOW:]  # a view holding only the last window would show less: start again
        return protocol.transcript_patch(self.rev, base, None, newest, [], more=older or len(messages) > len(newest),
                                         usage=usage)

    def _shown_after(self, after: str | None, new: int) -> int:
        """How many messages a view that holds only the newest `WINDOW` heard holds after a patch that
        keeps them up to `after` and appends `new` messages."""
        if after is None:
            return new
        ids = self._ids
        at = len(ids) - 1 if ids[-1] == after else ids.index(after)
        return max(0, at - max(0, len(ids) - WINDOW) + 1) + new

    def window(self, messages: list[UIMessage], probe_id: str, older: bool = False) -> protocol.TranscriptPatch:
        """The newest `WINDOW` messages as a patch that replaces view `probe_id`'s list (its
        ``transcript_request`` without ``before``). `messages` must be what the views last heard
        (the caller sends the pending patch first)."""
        newest = messages[-WINDOW:]
        more = older or len(messages) > len(newest)
        return protocol.transcript_patch(self.rev, self.rev, None, newest, [], more=more, probe_id=probe_id,
                                         usage=self._usage)

    def page(self, messages: list[UIMessage], before: str, limit: int, probe_id: str,
             read_older: Callable[[str, int], list[UIMessage]], older: bool = False) -> protocol.TranscriptPage:
        """Up to `limit` (≤ `PAGE`) messages of the branch just before message `before`, oldest first,
        for view `probe_id`: from `messages` (the branch in memory), else `read_older(before, n)` (the n
        messages before `before` on its path in SQLite); ``more``: older ones remain."""
        limit = max(1, min(int(limit), PAGE))
        at = self._ids.index(before) if before in self._heard else -1
        if at > 0:
            chunk, more = messages[max(0, at - limit):at], at > limit or older
        else:
            rows = read_older(before, limit + 1)
            chunk, more = rows[-limit:], len(rows) > limit
        return protocol.transcript_page(self.rev, before, chunk, more=more, probe_id=probe_id)

    def trait(self, messages: list[UIMessage], older: bool = False) -> tuple[list[UIMessage], dict[str, Any]]:
        """`(newest WINDOW messages, {rev, more, usage})`: what the `messages` and `transcript` traits hold."""
        newest = messages[-WINDOW:]
        return newest, {"rev": self.rev, "more": older or len(messages) > len(newest), "usage": self._usage}


def _changed(heard: UIMessage | None, now: UIMessage) -> bool:
    """`now` is not what was heard (a message never heard counts as unchanged: older than the views hold)."""
    return heard is not None and heard is not now and heard != now


def _keep(message: UIMessage) -> UIMessage:
    """What to remember of a message sent: itself when final, else a copy (it may change in place)."""
    return message if is_final(message) else copy.deepcopy(message)


_Totals = tuple[int, float, int, float | None, int]
_ZERO: _Totals = (0, 0, 0, None, 0)


def usage_totals(messages: list[UIMessage]) -> dict[str, Any]:
    """`{turns, tokens, unknown, cost, priced}` over the branch: what the panel's header totals when it
    holds only the newest messages (js/src/usage.ts `usageTotals`, the same rules: a turn is an assistant
    message with `metadata.usage`; one whose count is unknown is left out of `tokens`; `cost`, US
    dollars, sums the known costs of counted turns, None when there is none)."""
    totals = _ZERO
    for message in messages:
        totals = _add(totals, message)
    return _as_dict(totals)


def _add(totals: _Totals, message: UIMessage) -> _Totals:
    """`totals` with `message` counted (`usage_totals`)."""
    meta = message.get("metadata")
    if not isinstance(meta, dict) or "usage" not in meta:
        return totals
    turns, tokens, unknown, cost, priced = totals
    usage = meta["usage"] if isinstance(meta["usage"], dict) else {}
    total = None if usage.get("source") == "estimated" else _number(usage.get("total_tokens"))
    if total is None or ("source" in usage and usage["source"] is None):
        return turns + 1, tokens, unknown + 1, cost, priced
    price = _number(meta.get("cost_usd"))
    if price is None:
        return turns + 1, tokens + total, unknown, cost, priced
    return turns + 1, tokens + total, unknown, (cost or 0) + price, priced + 1


def _as_dict(totals: _Totals) -> dict[str, Any]:
    return dict(zip(("turns", "tokens", "unknown", "cost", "priced"), totals, strict=True))


def _number(x: object) -> float | int | None:
    return x if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None
