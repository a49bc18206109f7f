"""Interaction contracts between agents, sans I/O: the document and its schema, the terms
hash, keys and proofs (acceptances, contract and card signatures), the lifecycle, the A2A
wire, and the enforcement decision. Storage, HTTP and A2A delivery are adapters around it
(accord.store.contracts_*, accord.server.contracts)."""
