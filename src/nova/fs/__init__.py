"""Files on disk, opened safely: private modes for Nova's own files, regular-file-only opening, secret and internal paths."""
