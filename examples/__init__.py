"""Example agents for ``accord serve --agent examples.<module>:agent`` (run from the
repository root with ``PYTHONPATH=.``); see docs/executor.md."""
