"""accord's version (a module of its own: the layers below the root import it, not the root)."""

__version__ = "0.1.0"
