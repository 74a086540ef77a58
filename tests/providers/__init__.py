"""Provider-shaped fake servers (OpenAI chat completions, Anthropic messages) on 127.0.0.1, for
litellm's real providers pointed at them with `api_base`. See `server.py`."""
