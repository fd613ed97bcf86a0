"""What people read: figures, progress lines and one-line text shared by the CLI, the TUI, the server and reports."""
