"""Agent keys and signatures: Ed25519 key sets (JWKS), RFC 8785 canonical JSON, and agent
card signatures as A2A 1.0 §8.4 specifies them (docs/authentication.md). Below the client,
which verifies the cards it fetches, and the contracts feature, which signs with the same
keys."""
