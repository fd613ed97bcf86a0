"""Subcommands of `nova`, each a typer app or command function mounted by `nova.cli`."""
