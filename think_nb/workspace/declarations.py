"""The workspace tools' descriptions and JSON schemas, as `think_nb.tools.tool.from_function` makes them
from the signatures and docstrings in `think_nb.workspace.tools` (tests/test_workspace_tools.py
compares them): given here so that offering the tools (every agent does, by default) builds no
pydantic model and parses no docstring; a tool's model is built when a call to it is validated.
"""

DECLARED: dict[str, dict] = {
    "read": {
        "description": "Read a file from the workspace. Returns lines as `N<TAB>text`, at most 2000 lines of at "
        "most\n"
        "\n"
        "2000 characters each; says what was truncated. Use offset/limit to page through long "
        "files.",
        "parameters": {
            "properties": {
                "path": {"description": "absolute workspace path, e.g. /notes/todo.md", "type": "string"},
                "offset": {
                    "anyOf": [{"type": "integer"}, {"type": "null"}],
                    "default": None,
                    "description": "first line to return (1-based)",
                },
                "limit": {
                    "anyOf": [{"type": "integer"}, {"type": "null"}],
                    "default": None,
                    "description": "number of lines to return",
                },
            },
            "required": ["path"],
            "type": "object",
        },
    },
    "write": {
        "description": "Create or overwrite a text file in the workspace (parent directories are created).",
        "parameters": {
            "properties": {
                "path": {"description": "absolute workspace path, e.g. /notes/todo.md", "type": "string"},
                "content": {"description": "the whole new content of the file", "type": "string"},
            },
            "required": ["path", "content"],
            "type": "object",
        },
    },
    "edit": {
        "description": "Replace text in a workspace file. old_string must occur exactly once (include more "
        "context\n"
        "\n"
        "to make it unique) unless replace_all is true. An empty old_string creates a new file.",
        "parameters": {
            "properties": {
                "path": {"description": "absolute workspace path", "type": "string"},
                "old_string": {"description": "the exact text to replace (read the file first)", "type": "string"},
                "new_string": {"description": "the replacement text", "type": "string"},
                "replace_all": {
                    "default": False,
                    "description": "replace every occurrence instead of exactly one",
                    "type": "boolean",
                },
            },
            "required": ["path", "old_string", "new_string"],
            "type": "object",
        },
    },
    "list": {
        "description": "List a workspace directory.",
        "parameters": {
            "properties": {
                "path": {"default": "/", "description": "absolute directory path (default /)", "type": "string"},
                "limit": {"default": 200, "description": "at most this many entries (1-1000)", "type": "integer"},
                "offset": {"default": 0, "description": "skip this many entries", "type": "integer"},
            },
            "type": "object",
        },
    },
    "find": {
        "description": "Find workspace files by glob pattern, e.g. **/*.md or /notes/*.txt.",
        "parameters": {
            "properties": {
                "pattern": {
                    "description": "glob pattern; * matches within a directory, ** across directories, ? one character",
                    "type": "string",
                }
            },
            "required": ["pattern"],
            "type": "object",
        },
    },
    "grep": {
        "description": 'Search file contents in the workspace, line by line. Returns "file:line: text" matches\n'
        "\n"
        "(at most 200); files over 1 MiB are skipped.",
        "parameters": {
            "properties": {
                "query": {"description": "regular expression (or plain text with fixedString)", "type": "string"},
                "include": {
                    "default": "**/*",
                    "description": "glob of files to search (default **/*)",
                    "type": "string",
                },
                "fixedString": {"default": False, "description": "treat query as plain text", "type": "boolean"},
                "caseSensitive": {"default": False, "description": "match case (default false)", "type": "boolean"},
                "contextLines": {
                    "default": 0,
                    "description": "lines of context around each match (0-10)",
                    "type": "integer",
                },
            },
            "required": ["query"],
            "type": "object",
        },
    },
    "delete": {
        "description": "Delete a workspace file, or a directory with recursive=true. Deleting a missing path "
        "is not an error.",
        "parameters": {
            "properties": {
                "path": {"description": "absolute workspace path", "type": "string"},
                "recursive": {
                    "default": False,
                    "description": "delete a directory and everything in it",
                    "type": "boolean",
                },
            },
            "required": ["path"],
            "type": "object",
        },
    },
}
