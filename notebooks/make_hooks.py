"""Source of notebooks/hooks.ipynb: run `python notebooks/make_hooks.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# Hooks: watch and change every step of a turn

A **turn** is what happens between a user's message and the agent's reply: the agent assembles
the system prompt, the history and the tools; calls the model; runs the tools the model asks
for; calls the model again with their results; and so on until the model answers. Each model
call is a **step**.

Like Cloudflare's Think, a think_nb agent exposes that loop through **hooks**, methods you
override (sync or `async`):

| hook | when | may return |
|---|---|---|
| `before_turn(ctx)` | once, before the first model call | a `TurnConfig`: model, prompt, messages, tools of the turn |
| `before_step(ctx)` | before each model call | a `StepConfig`: model, prompt, messages, tools of that step |
| `on_chunk(chunk)` | every streamed piece of the reply | (observation only) |
| `before_tool_call(ctx)` | before each tool runs | `ToolCallDecision.allow / block / substitute` |
| `after_tool_call(ctx)` | after each tool call, with its output or error and time | |
| `on_step_finish(ctx)` | after each step, with its text, tool calls and usage | |
| `on_chat_response(result)` | after the turn is stored | (start a follow-up turn here) |
| `on_chat_error(error)` | when a turn fails | a friendlier error for the user |

This notebook prints every hook of one turn, changes a turn from `before_turn`, `before_step`
and `before_tool_call`, asks a turn for a typed answer, then **steps** through a turn cell by
cell, like a debugger.

The agents use a `ScriptedModel`: a fake model that plays back a script (one list of items per
model call) and records in `.requests` exactly what it was sent, so you can see the effect of
each hook. To run any of them on a hosted model, one line in the class:

```python
def get_model(self): return "openai/gpt-4o-mini"   # and set OPENAI_API_KEY
```"""),
    new_code_cell('''%load_ext think_nb
from think_nb import StepConfig, Think, ToolCallDecision, TurnConfig, tool
from think_nb.testing import ScriptedModel as S


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Rain in {city}, 12 °C"'''),
    new_markdown_cell("""## 1. Every hook of one turn

`Loud` prints a line in each hook. Its script: in step 0 the model calls `add`, in step 1 it
answers. `on_chunk` sees dozens of chunks (text arrives a few characters at a time), so it
prints only the ones that are not deltas."""),
    new_code_cell('''script = S([
    [S.tool_call("add", {"a": 2, "b": 40})],
    [S.text("2 plus 40 is 42."), S.usage(52, 8)],
])


class Loud(Think):
    def get_model(self):
        return script.model     # a hosted model instead: return "openai/gpt-4o-mini"

    def get_tools(self):
        return [add]

    def before_turn(self, ctx):
        print(f"before_turn      model={ctx.model} tools={list(ctx.tools)} messages={len(ctx.messages)}")

    def on_chunk(self, chunk):
        if not chunk["type"].endswith("-delta"):
            print(f"  on_chunk       {chunk['type']}")

    def before_tool_call(self, ctx):
        print(f"before_tool_call {ctx.tool_name}({ctx.input})")

    def after_tool_call(self, ctx):
        print(f"after_tool_call  {ctx.tool_name} -> {ctx.output!r} in {ctx.duration_ms:.1f} ms")

    def on_step_finish(self, ctx):
        print(f"on_step_finish   step {ctx.step_number}: {ctx.finish_reason}, text={ctx.text!r}, usage={ctx.usage}")

    def on_chat_response(self, result):
        print(f"on_chat_response {result.status}: {result.message['parts'][-1].get('text')!r}")

    def on_chat_error(self, error):
        print(f"on_chat_error    {type(error).__name__}: {str(error).splitlines()[0][:90]}")
        return "The model is unavailable right now; please try again in a minute."


loud = Loud("loud")
loud.clear_messages()  # Run All again starts this demo afresh
result = await loud.send("What is 2 plus 40?")'''),
    new_markdown_cell("""`on_chat_error` did not fire: nothing failed. Here the model fails in the middle of its reply.
The hook's return value replaces the error text the user sees (the partial reply is kept):"""),
    new_code_cell('''script.steps.append([S.text("Let me th"), S.error("503 model overloaded")])
result = await loud.send("And 3 plus 4?")
result.status, result.error'''),
    new_markdown_cell("""## 2. Changing a turn from `before_turn`

`before_turn(ctx)` sees everything the model is about to get: `ctx.system`, `ctx.messages`,
`ctx.tools`, `ctx.model`. Return a `TurnConfig` to change any of it **for this turn only**:
here, questions that look hard go to a bigger model (another scripted model, standing in for
e.g. `"openai/gpt-4o"`), with a different prompt, and only the `add` tool."""),
    new_code_cell('''small = S([[S.text("Rain in Paris today.")]])
big = S([[S.text("Let me think step by step...")]])


class Router(Think):
    def get_model(self):
        return small.model

    def get_tools(self):
        return [add, weather]

    def before_turn(self, ctx):
        if "hard" in ctx.messages[-1]["content"]:
            return TurnConfig(model=big.model, system="Think step by step.", active_tools=["add"])
        return None  # keep the defaults


router = Router("router")
router.clear_messages()  # Run All again starts this demo afresh
await router.send("Weather in Paris?")
await router.send("A hard one: 17 times 23?")
for name, s in [("small", small), ("big", big)]:
    request = s.requests[0]
    print(f"{name}: system={request['messages'][0]['content']!r}, "
          f"tools={[t['function']['name'] for t in request['tools']]}")'''),
    new_markdown_cell("""## 3. Blocking or replacing a tool call from `before_tool_call`

`before_tool_call(ctx)` runs before each tool. Return `ToolCallDecision.block(reason)` to refuse
(the reason becomes the tool's output, so the model knows), `.substitute(output)` to answer
without running the tool (a cache, a mock, a safer value), `.allow(input)` to run it with a
changed input, or None to run it as asked."""),
    new_code_cell('''guard_script = S([
    [S.tool_call("weather", {"city": "Paris"}), S.tool_call("weather", {"city": "Atlantis"}),
     S.tool_call("add", {"a": 1, "b": 1})],
    [S.text("Paris: sunny (cached). Atlantis: refused. 1 + 1 = 2.")],
])


class Guarded(Think):
    def get_model(self):
        return guard_script.model

    def get_tools(self):
        return [add, weather]

    def before_tool_call(self, ctx):
        if ctx.tool_name == "weather" and ctx.input["city"] == "Atlantis":
            return ToolCallDecision.block("Atlantis is not a real city.")
        if ctx.tool_name == "weather":
            return ToolCallDecision.substitute("Sunny in Paris, 24 °C (cached)")
        return None


guarded = Guarded("guarded")
guarded.clear_messages()  # Run All again starts this demo afresh
await guarded.send("Weather in Paris and Atlantis, and 1+1?")
guarded.tool_calls_df()[["tool_name", "input", "state", "output"]]'''),
    new_markdown_cell("What the model was told on its second call:"),
    new_code_cell('''[m["content"] for m in guard_script.requests[1]["messages"] if m["role"] == "tool"]'''),
    new_markdown_cell("""## 4. Changing one step from `before_step`

`before_step(ctx)` runs before **each** model call of a turn (Think's `beforeStep`), with
`ctx.step_number`, the finished steps (`ctx.steps`), and the messages, model and tools about to
be used. A `StepConfig` it returns changes that step only. Here the first step may only look up
the weather; from the second step on the model gets `add` instead."""),
    new_code_cell('''steps_script = S([
    [S.tool_call("weather", {"city": "Oslo"})],
    [S.tool_call("add", {"a": 12, "b": 3})],
    [S.text("Rain in Oslo, 12 °C; 3 degrees warmer would be 15 °C.")],
])


class Stepwise(Think):
    include_workspace_tools = False   # only the two tools below (not the workspace's read, write, ...)

    def get_model(self):
        return steps_script.model

    def get_tools(self):
        return [add, weather]

    def before_step(self, ctx):
        print(f"before_step step {ctx.step_number}: {len(ctx.steps)} step(s) done, tools {ctx.active_tools}")
        if ctx.step_number == 0:
            return StepConfig(active_tools=["weather"])
        return StepConfig(active_tools=["add"])


stepwise = Stepwise("stepwise")
stepwise.clear_messages()  # Run All again starts this demo afresh
await stepwise.send("Weather in Oslo, and 3 degrees warmer?")
[[t["function"]["name"] for t in r["tools"]] for r in steps_script.requests]   # what each step offered'''),
    new_markdown_cell("""## 5. A typed answer: `output_type`

Pass a pydantic model as `output_type` and the turn ends with an instance of it in
`result.output` (Think's structured output). The model may use its tools first; it answers by
calling a hidden `think_final_answer` tool whose input schema is the model's JSON schema, and
the answer is validated (an invalid one goes back to the model with pydantic's error).
`TurnConfig(output_type=...)` from `before_turn` does the same."""),
    new_code_cell('''from pydantic import BaseModel


class Forecast(BaseModel):
    city: str
    rain: bool
    celsius: float


typed_script = S([
    [S.tool_call("weather", {"city": "Oslo"})],
    [S.tool_call("think_final_answer", {"city": "Oslo", "rain": True, "celsius": 12})],
])


class Typed(Think):
    def get_model(self):
        return typed_script.model

    def get_tools(self):
        return [weather]


typed = Typed("typed")
typed.clear_messages()  # Run All again starts this demo afresh
result = await typed.send("Weather in Oslo?", output_type=Forecast)
print(typed_script.requests[0]["options"])   # tool_choice forced: a tool call each step
result.output'''),
    new_markdown_cell("""## 6. Step mode: a turn, one hook at a time

`agent.step(message)` starts a turn that **pauses before every hook**: `before_turn`, each
`before_tool_call` and `after_tool_call`, each `on_step_finish`, and `on_chat_response`.
`stepper.next()` runs to the next pause and returns an event showing where the turn is and
what it is about to use. It works in a cell without `await` (`await stepper.next()` works too).
While paused you may edit `event.ctx`; the turn goes on with your change.

The hooks in step mode are the agent's own (none here): stepping works on any agent. The
chat panel, if shown, streams the turn and says "paused at ..."."""),
    new_code_cell('''step_script = S([
    [S.tool_call("add", {"a": 2, "b": 40})],
    [S.text("Arr, the sum be 41, matey!")],
])


class Calc(Think):
    def get_model(self):
        return step_script.model

    def get_system_prompt(self):
        return "You are a careful calculator."

    def get_tools(self):
        return [add]


calc = Calc("stepper")
calc.clear_messages()  # Run All again starts this demo afresh
stepper = calc.step("What is 2 plus 40?")
event = stepper.next()
event'''),
    new_markdown_cell("""The turn is paused at `before_turn`: above are the model, the system prompt, the messages and
the tools it is about to send. Change the system prompt, then go on:"""),
    new_code_cell('''event.ctx.system = "You are a pirate. Answer like one."
event = stepper.next()
event'''),
    new_markdown_cell("""Now the model has asked for `add(2, 40)`, and the tool has not run yet. Instead of running it,
give the model an output of our own (`event.block(reason)` would refuse the call):"""),
    new_code_cell('''event.substitute(41)
event = await stepper.next()   # the awaitable form
event'''),
    new_code_cell("event = stepper.next()\nevent   # the end of step 0"),
    new_markdown_cell("`stepper.run()` finishes the turn without pausing again:"),
    new_code_cell('''result = stepper.run()
result.status, result.message["parts"][-1]["text"]'''),
    new_markdown_cell("""The model really received the pirate prompt, and the substituted output; the stored
transcript records what happened (the `add` call's output is 41):"""),
    new_code_cell('''print(step_script.requests[0]["messages"][0])
print([m for m in step_script.requests[1]["messages"] if m["role"] == "tool"])
calc.tool_calls_df()[["tool_name", "input", "output"]]'''),
    new_markdown_cell("`stepper.cancel()` aborts a stepped turn instead (status `aborted`, the partial reply kept):"),
    new_code_cell('''step_script.steps.append([S.text("never sent")])
stepper = calc.step("One more?")
print(stepper.next())
stepper.cancel()'''),
    new_markdown_cell("""## 7. The trace of a turn

Every turn, stepped or not, leaves a **trace**: one row per hook call and per run of chunks of
the same type, with the time offset from the start of the turn in milliseconds, the step, the
tool, a summary and the duration. It is stored in SQLite with the turn. `agent.trace()` is the
latest turn's (pass a `request_id` for another); here, the `Guarded` agent's turn: the model's
three tool calls stream in, then each call sits between its `before_tool_call` and
`after_tool_call` (the two `weather` calls never ran: the hook substituted one and blocked the other):"""),
    new_code_cell("guarded.trace()"),
    new_markdown_cell("""`%think trace AGENT` shows the same table for the agent's latest turn; here the `Loud`
agent's, the one that failed (its trace ends with the `error` chunk). The first turn in a kernel
also pays for importing litellm (several seconds), which a trace shows as a long model call."""),
    new_code_cell("%think trace loud"),
    new_markdown_cell("""## 8. Replaying a turn

The trace also keeps every chunk with its timing, so a turn can be **replayed**: offline,
the same every time, no model and no API key needed: handy in front of a class.
`agent.recording()` is the latest turn's recording; `await agent.replay(speed=4)` plays it into
the agent's chat panel at four times the recorded pace (the transcript is not changed)."""),
    new_code_cell('''rec = guarded.recording()
print(rec.request_id, len(rec.chunks), "chunks over", rec.chunks[-1][0], "ms")
guarded.panel()'''),
    new_code_cell('''chunks = await guarded.replay(speed=4)
print(len(chunks), "chunks replayed into the panel above")'''),
    new_markdown_cell("""`rec.save("turn.json")` keeps it in a file (`Recording.load(path)` reads it back), and
`rec.to_scripted_model()` rebuilds the model's side of the turn as a `ScriptedModel`, so the
turn can run again through the whole engine, hooks and tools included:"""),
    new_code_cell('''again = rec.to_scripted_model()


class GuardedAgain(Guarded):
    def get_model(self):
        return again.model


rerun = GuardedAgain("rerun")
rerun.clear_messages()  # Run All again starts this demo afresh
await rerun.send("Weather in Paris and Atlantis, and 1+1?")
rerun.messages[-1]["parts"][-1]["text"]'''),
    new_markdown_cell("""Next: `tools_and_approval.ipynb` (tools, approvals, client tools), `memory.ipynb` (context
blocks and compaction), `sub_agents.ipynb` (agents driving agents)."""),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("hooks.ipynb").write_text(nbformat.writes(nb))
