"""The implementations of the `nova` commands. `nova.cli.main` declares every command and imports its
module here only when that command runs (see `nova.cli.commands.typer_classes`)."""
