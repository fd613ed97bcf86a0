"""Instruction files and auto memory (SPEC INS-1..3, MEM-1..9).

    instructions   the always-on rules: NOVA.md / AGENTS.md / CLAUDE.md chain with @imports (`load_rules`)
    store          one Markdown file per memory, routed by type, with a capped MEMORY.md index
    governance     the deterministic checks every write passes (`remember`)
    reviews        the review ledger in the home: content hashes of what Nova wrote and the user approved
    secrets        secret detection (own patterns, detect-secrets, normalization, high-entropy tokens)
    extract        model-driven extraction after a turn without tool calls, single-flight
    recall         scan heads, select <= 5 (model or BM25), render; non-blocking prefetch
    consolidate    gated, locked background merge of duplicates and deletion of expired memories
    slash          `/memory` and `/remember` for the agent loop

Submodules are imported where used; this package imports nothing so that `import nova.memory.store`
stays cheap for the CLI.
"""
