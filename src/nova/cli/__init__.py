"""The `nova` command: its entry point (`nova.cli.main`), its subcommands (`nova.cli.commands`) and their terminal rendering."""
