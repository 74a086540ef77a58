"""When a scheduled task runs: parsing `when` into a `Spec` and computing occurrences.

Accepted forms (Think's `schedule(when, ...)` / `scheduleEvery` / the `getScheduledTasks` DSL):

| `when`                                   | kind       | runs                                          |
|------------------------------------------|------------|-----------------------------------------------|
| `datetime` (naive = local time)          | `once`     | at that moment                                |
| seconds (`int`/`float`) or `timedelta`   | `delay`    | once, that long after it was scheduled        |
| `"every 30 seconds"`, `"every 5 minutes"`, `"every 2 hours"` | `interval` | repeatedly        |
| `"every day at 09:30"`, `"every weekday at 08:00"`, `"every week on mon,wed at 17:00"` | `cron` | wall clock  |
| a cron expression, e.g. `"*/15 * * * *"` (5 fields; 6 with seconds) | `cron` | wall clock               |

(Seconds in the DSL are a notebook addition: Think's smallest interval is a minute.)

A wall-clock form may end with `in <IANA zone>` (`"every day at 09:00 in Europe/Paris"`);
otherwise the task's `timezone`, else the machine's local zone. Intervals take no zone. Cron
expressions are parsed by `croniter` (a maintained parser); the DSL is rewritten into cron.
Times are epoch seconds (float) throughout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from think_nb.errors import UserError

KINDS = ("once", "delay", "interval", "cron")
UNITS = {"second": 1, "minute": 60, "hour": 3600}
DAYS = {"mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6, "sun": 0}
EXAMPLES = ('e.g. 60 (seconds from now), a datetime, "every 5 minutes", "every day at 09:00", '
            '"every week on mon,thu at 17:30 in Europe/Paris" or a cron expression like "*/15 * * * *"')


@dataclass(frozen=True)
class Spec:
    """A parsed `when`.

    Attributes:
        kind: `once` | `delay` | `interval` | `cron`.
        text: the normalised form (cron expression, `every N seconds`, or an ISO time).
        seconds: the interval (kind `interval`) or the delay (kind `delay`), else None.
        at: the moment (epoch s) of a `once`, else None.
        timezone: the IANA zone of a `cron` spec (None: local time).
    """

    kind: str
    text: str
    seconds: float | None = None
    at: float | None = None
    timezone: str | None = None

    def first(self, now: float) -> float:
        """The first occurrence for a task scheduled at `now`."""
        if self.kind == "once":
            assert self.at is not None
            return self.at
        if self.kind in ("delay", "interval"):
            assert self.seconds is not None
            return now + self.seconds
        return self.next_after(now, anchor=now)  # type: ignore[return-value]

    def next_after(self, now: float, anchor: float) -> float | None:
        """The first occurrence strictly after `now` (None for one-shot kinds). Intervals keep
        their phase: `anchor + k * seconds` (a missed run is not backfilled)."""
        if self.kind in ("once", "delay"):
            return None
        if self.kind == "interval":
            assert self.seconds is not None
            periods = int((now - anchor) // self.seconds) + 1
            return anchor + max(1, periods) * self.seconds
        from croniter import croniter

        start = datetime.fromtimestamp(now, _zone(self.timezone))
        return float(croniter(self.text, start).get_next(float))


def parse(when: object, timezone: str | None = None) -> Spec:
    """`when` → `Spec` (see the module docstring).

    Raises:
        UserError: an unknown form, a bad zone, an interval ≤ 0, or a zone on an interval; the
            message gives examples.
    """
    if timezone is not None:
        _zone(timezone)
    if isinstance(when, bool):
        raise UserError(f"schedule when={when!r} is not a time; {EXAMPLES}.")
    if isinstance(when, datetime):
        at = when if when.tzinfo is not None else when.astimezone()
        return Spec("once", at.isoformat(), at=at.timestamp())
    if isinstance(when, timedelta):
        when = when.total_seconds()
    if isinstance(when, int | float):
        if not when >= 0:
            raise UserError(f"schedule when={when!r}: a delay is a number of seconds ≥ 0; {EXAMPLES}.")
        return Spec("delay", f"in {float(when):g} s", seconds=float(when))
    if not isinstance(when, str) or not when.strip():
        raise UserError(f"schedule when={when!r} is not a time; {EXAMPLES}.")
    return _parse_text(" ".join(when.split()), timezone)


def interval(seconds: object) -> Spec:
    """`schedule_every(seconds, ...)`: an interval Spec. Raises UserError for seconds ≤ 0."""
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise UserError(f"schedule_every(seconds={seconds!r}): pass a number of seconds > 0, e.g. 60.")
    return Spec("interval", f"every {float(seconds):g} seconds", seconds=float(seconds))


def _parse_text(text: str, timezone: str | None) -> Spec:
    zone_match = re.fullmatch(r"(every .+?) in ([A-Za-z_]+(?:/[A-Za-z0-9_+\-]+)*)", text, re.IGNORECASE)
    if zone_match:
        text, inline = zone_match.group(1), _canonical_zone(zone_match.group(2))
    if text.lower().startswith("every"):
        text = text.lower()
    if zone_match:
        if timezone is not None and timezone != inline:
            raise UserError(f"schedule {text!r} says `in {inline}` but timezone={timezone!r}; give one zone.")
        timezone = inline
    m = re.fullmatch(r"every (\d+(?:\.\d+)?) (second|minute|hour)s?", text) or re.fullmatch(
        r"every (second|minute|hour)()", text)
    if m:
        if timezone is not None:
            raise UserError(f"schedule {text!r}: an interval takes no timezone (it runs every so many seconds).")
        count = float(m.group(1)) if m.group(2) else 1.0
        unit = m.group(2) or m.group(1)
        if count <= 0:
            raise UserError(f"schedule {text!r}: the interval must be > 0.")
        return Spec("interval", f"every {count * UNITS[unit]:g} seconds", seconds=count * UNITS[unit])
    cron = _dsl_to_cron(text)
    if cron is None:
        from croniter import croniter

        if not croniter.is_valid(text):
            raise UserError(f"schedule when={text!r} is neither a known form nor a cron expression; {EXAMPLES}.")
        cron = text
    return Spec("cron", cron, timezone=timezone)


def _dsl_to_cron(text: str) -> str | None:
    m = re.fullmatch(r"every (day|weekday) at (\d{1,2}):(\d{2})", text)
    if m:
        hour, minute = _clock(m.group(2), m.group(3), text)
        return f"{minute} {hour} * * {'1-5' if m.group(1) == 'weekday' else '*'}"
    m = re.fullmatch(r"every week on ([a-z, ]+) at (\d{1,2}):(\d{2})", text)
    if m:
        hour, minute = _clock(m.group(2), m.group(3), text)
        names = [d.strip() for d in m.group(1).split(",") if d.strip()]
        days = []
        for name in names:
            key = name[:3]
            if key not in DAYS or name not in (key, _full_day(key)):
                raise UserError(f"schedule {text!r}: {name!r} is not a day (mon, tue, ... or monday, ...).")
            days.append(DAYS[key])
        if len(set(days)) != len(days):
            raise UserError(f"schedule {text!r} names a day twice.")
        return f"{minute} {hour} * * {','.join(str(d) for d in days)}"
    return None


def _full_day(key: str) -> str:
    return {"mon": "monday", "tue": "tuesday", "wed": "wednesday", "thu": "thursday", "fri": "friday",
            "sat": "saturday", "sun": "sunday"}[key]


def _clock(hour: str, minute: str, text: str) -> tuple[int, int]:
    h, m = int(hour), int(minute)
    if not (0 <= h < 24 and 0 <= m < 60):
        raise UserError(f"schedule {text!r}: {hour}:{minute} is not a time of day (HH:MM, 00:00-23:59).")
    return h, m


def _canonical_zone(name: str) -> str:
    """The IANA spelling of `name`, matched without regard to case ("europe/paris" → "Europe/Paris")."""
    from zoneinfo import available_timezones

    found = {zone.lower(): zone for zone in available_timezones()}.get(name.lower())
    if found is not None:
        return found
    raise UserError(f"schedule: {name!r} is not an IANA time zone (e.g. 'Europe/Paris', 'UTC').")


def _zone(name: str | None) -> tzinfo | None:
    if name is None:
        return datetime.now().astimezone().tzinfo
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(f"timezone={name!r} is not an IANA time zone (e.g. 'Europe/Paris', 'UTC').") from None
