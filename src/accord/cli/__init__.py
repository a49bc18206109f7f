"""The ``accord`` command."""
