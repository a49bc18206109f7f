"""Commands: ``/<name> <arguments>`` messages that run on the harness instead of a turn.
See docs/harness.md, "Commands".

::

    from accord.harness.commands import Argument, CommandSpec

    target = Argument("env", choices=("dev", "prod"), required=True)
    spec = CommandSpec("deploy", "Deploy a build", arguments=(target,))
    agent.commands.register(spec, lambda context: f"deploying to {context.args['env']}")
"""

from accord.harness.commands._parse import CommandCall, parse_command
from accord.harness.commands._registry import CommandHandler, CommandRegistry
from accord.harness.commands._spec import Argument, ArgumentError, CommandSpec, check_arguments

__all__ = [
    "Argument",
    "ArgumentError",
    "CommandCall",
    "CommandHandler",
    "CommandRegistry",
    "CommandSpec",
    "check_arguments",
    "parse_command",
]
