"""History as the loop keeps it: the incremental view of a conversation, its invariants, the paths its tools touched."""
