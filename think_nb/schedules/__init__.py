"""Scheduled tasks (Think's `getScheduledTasks`, `schedule`, `scheduleEvery`): when they run
(`spec`), the clock (`clock`), the loop that runs them (`scheduler`), the DataFrame (`table`)."""

from think_nb.schedules.scheduler import ScheduledTask, ScheduledTaskContext

__all__ = ["ScheduledTask", "ScheduledTaskContext"]
