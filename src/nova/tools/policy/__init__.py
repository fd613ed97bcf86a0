"""The policies a tool consults on its own: the read policy (which paths need asking), the shell parser behind bash rules, and the sandbox commands run in."""
