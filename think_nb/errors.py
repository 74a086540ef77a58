"""The exceptions think_nb raises. Messages name the identifier and end with the fix."""


class ThinkError(Exception):
    """Base class of every think_nb error."""


class UserError(ThinkError):
    """think_nb was used wrongly (bad agent name, bad tool, bad option); the message says how to fix it."""


class ModelError(ThinkError):
    """The model could not be reached or rejected the call (litellm or provider failure)."""
