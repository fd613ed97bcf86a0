"""Nova's terminal UI (Textual). Needs the `tui` extra: `pip install 'nova-agent[tui]'`."""
