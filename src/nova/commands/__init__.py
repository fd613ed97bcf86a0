"""The implementations of the `nova` commands. `nova.cli` declares every command and imports its
module here only when that command runs (see `nova.commands.typer_classes`)."""
