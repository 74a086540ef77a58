"""Structured output: a turn whose answer is a validated pydantic object (Think's structured
workflow turns, `step.prompt(..., {output})`).

`await agent.send(text, output_type=Invoice)`, or `TurnConfig(output_type=Invoice)` from
`before_turn`, runs a normal multi-step, tool-using turn that ends when the model calls a hidden
final-answer tool, `think_final_answer` (`think_final_answer_1`, `_2`, ... when a tool of the
turn has that name), whose input schema is the model's JSON schema. As in Think:

- the system prompt gets Think's instruction to end by calling that tool;
- `tool_choice` is forced: `"required"` when the turn has other tools (it may use them, then
  answer), else that tool; a `tool_choice` of the turn's `TurnConfig` (or a step's `StepConfig`)
  wins; on the last step (`max_steps`) only that tool is offered, and forced;
- the turn stops after the step that calls it; its input, validated by pydantic, is
  `TurnResult.output`. `before_tool_call` / `after_tool_call` do not see it (Think's final tool
  is not wrapped for them);
- its parts stream like any call's but are left out of the stored message (Think's
  `_stripInternalFinalAnswerParts`).

Beyond Think, the input is validated: invalid input is the call's `output-error` (pydantic's
message), which the model reads in its next step; a turn that ends without a valid answer (its
steps spent, or a step without tool calls) ends `error` with `StructuredOutputError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from think_nb.errors import ModelError, UserError
from think_nb.tools.tool import Tool

if TYPE_CHECKING:
    import pydantic

FINAL_ANSWER_TOOL = "think_final_answer"
"""The hidden tool's name (Think's `THINK_FINAL_ANSWER_TOOL_NAME`)."""

DESCRIPTION = ("Provide your final answer. The arguments MUST match the required schema. Calling this tool ends "
               "the task — call it exactly once when you have everything you need.")
"""The hidden tool's description (Think's words)."""

RECORDED = "Final answer recorded."
"""The output of a valid final-answer call (what Think's tool returns)."""


class StructuredOutputError(ModelError):
    """A structured turn ended without a valid final answer (the model never called the
    final-answer tool, or only with input the output type refuses)."""


def instruction(name: str) -> str:
    """Think's system-prompt line telling the model to end the turn by calling tool `name`."""
    return (f"When you have everything you need to answer, you MUST call the `{name}` tool exactly once with "
            f"arguments that match the required schema. Do not write the final answer as plain text — the "
            f"`{name}` tool call IS the answer and ends the task.")


def check_output_type(output_type: Any, where: str = "output_type") -> None:
    """Raise `UserError` unless `output_type` is None or a pydantic model class (the schema of the answer)."""
    if output_type is None:
        return
    import pydantic  # here: a turn without an output type never imports it

    if not (isinstance(output_type, type) and issubclass(output_type, pydantic.BaseModel)):
        raise UserError(f"{where}={output_type!r} is not a pydantic model class; pass a subclass of "
                        "pydantic.BaseModel, e.g. class Answer(BaseModel): value: float.")


@dataclass
class FinalAnswer:
    """The final-answer tool of one structured turn.

    Attributes:
        output_type: the pydantic model the answer must validate as.
        name: the tool's name this turn (`think_final_answer`, suffixed on a collision).
        tool: the `Tool` declared to the model (never run: the turn handles its calls).
    """

    output_type: type[pydantic.BaseModel]
    name: str
    tool: Tool

    @classmethod
    def for_turn(cls, output_type: type[pydantic.BaseModel], tools: dict) -> FinalAnswer:
        """The final-answer tool for a turn offering `tools` (`{name: Tool}`): named
        `think_final_answer`, or `think_final_answer_<n>` for the first n free (Think's suffixing)."""
        name, n = FINAL_ANSWER_TOOL, 1
        while name in tools:
            name, n = f"{FINAL_ANSWER_TOOL}_{n}", n + 1
        schema = output_type.model_json_schema()
        schema.setdefault("type", "object")
        return cls(output_type, name, Tool(name, DESCRIPTION, schema))

    @property
    def forced(self) -> dict:
        """The `tool_choice` that forces this tool (OpenAI format, which litellm translates)."""
        return {"type": "function", "function": {"name": self.name}}

    def default_choice(self, other_tools: bool) -> Any:
        """Think's turn-wide `tool_choice`: `"required"` with other tools, else this tool."""
        return "required" if other_tools else self.forced

    def validate(self, arguments: dict | None) -> tuple[pydantic.BaseModel | None, str | None]:
        """`(object, None)` for input the output type accepts, else `(None, the error text)` (the
        call's `output-error`, which tells the model what to fix)."""
        import pydantic

        try:
            return self.output_type.model_validate(arguments or {}), None
        except pydantic.ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(input)'}: {e['msg']}"
                                 for e in exc.errors(include_url=False))
            return None, (f"The final answer does not match the required schema ({problems}). Call {self.name} "
                          "again with corrected arguments.")

    def failure(self, steps: int, last_error: str | None) -> StructuredOutputError:
        """The turn's error when it ended without a valid answer after `steps` steps."""
        if last_error is None:
            return StructuredOutputError(f"The model ended the turn without calling the {self.name} tool, so the "
                                         f"turn has no {self.output_type.__name__}; use a model that supports tool "
                                         "calls, or say in the prompt what to answer.")
        return StructuredOutputError(f"The model gave no valid {self.output_type.__name__} in {steps} step(s): "
                                     f"{last_error} Raise max_steps or simplify {self.output_type.__name__}.")

