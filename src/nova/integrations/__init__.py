"""Nova's context engine inside agents built with other frameworks.

One module per framework, each an optional extra, each a thin adapter over the same engine
(`nova.integrations._engine.ContextEngine`: the context controller and the context compiler of the
agent loop, measured by one token ledger, recorded as a Nova session):

    nova.integrations.pydantic_ai     NovaCapability, a pydantic-ai capability    pip install 'nova-context-engine[pydantic-ai]'
    nova.integrations.openai_agents   NovaSession and its model-input filter      pip install 'nova-context-engine[openai-agents]'
    nova.integrations.langchain       NovaMiddleware, a LangChain agent middleware  pip install 'nova-context-engine[langchain]'

Importing this package imports no framework; importing an adapter without its extra fails with the
install line. docs/integrations.md shows each at work.
"""

__all__: list[str] = []
