"""``python -m accord`` is the ``accord`` command."""

from accord.cli._main import main

main()
