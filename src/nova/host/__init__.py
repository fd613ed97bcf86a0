"""The session host: live sessions kept open for the server and the TUI, and the context report it serves."""
