"""Example agents for ``accord serve --agent examples.<module>:agent`` (run from the
repository root, which accord serve puts on the import path); see docs/executor.md."""
