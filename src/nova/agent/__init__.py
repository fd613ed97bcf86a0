"""The agent loop, its tools, and the context-budget machinery that runs inside it."""
