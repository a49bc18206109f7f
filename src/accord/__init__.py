"""accord: a fast, durable A2A 1.0 platform for Python."""

__version__ = "0.1.0"
