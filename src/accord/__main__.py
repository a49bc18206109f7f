"""``python -m accord`` is the ``accord`` command."""

from accord.cli import main

main()
