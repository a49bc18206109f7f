"""Channels, help requests and replies: the channel extension v1 (docs/harness.md)."""
