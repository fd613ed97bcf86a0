"""Model providers behind one protocol (`nova.providers.base.Provider`)."""
