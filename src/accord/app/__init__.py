"""The composition root: settings in, a running application out — the store, the bus, the
engine, the agent and its features, and the bindings that serve them."""
