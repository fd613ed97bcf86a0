"""Nova's terminal UI (Textual). Needs the `tui` extra: `pip install 'nova-context-engine[tui]'`."""
