"""The command line: ``python -m estimation <command> ...``.

Each command lives in its own module exposing ``register(subparsers)``, which adds a
subparser and sets ``handler`` (a function of the parsed arguments returning an exit status).
Only the module of the command that runs is imported (`COMMANDS`): ``evaluate`` then loads
numpy and its readers, not scipy and the other commands' dependencies. Bad input (a malformed
file, an impossible option) exits with status 2 and one line ``FILE:LINE: reason`` (or the
ValueError's message) on stderr, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence

from estimation.formats.trec import InputFileError

# Command name -> the module that registers it, in the order of the help text.
COMMANDS = {
    "evaluate": "estimation.cli.evaluate",
    "simulate": "estimation.cli.simulate",
    "plan": "estimation.cli.plan",
    "judge": "estimation.cli.judge",
    "learn-dcg": "estimation.cli.learn_dcg",
    "select-training": "estimation.cli.select_training",
}

# Commands of other packages (a site's own), registered when importable: each module exposes
# ``register(subparsers)`` as the commands of `estimation.cli` do.
_OPTIONAL_COMMAND_MODULES: tuple[str, ...] = ()

BAD_INPUT_STATUS = 2
BROKEN_PIPE_STATUS = 128 + 13
"""As a Unix tool killed by SIGPIPE exits: the reader (``| head``) stopped early."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser with every available subcommand, or only `command`'s if it is one
    of `COMMANDS` (what running it needs)."""
    parser = argparse.ArgumentParser(
        prog="python -m estimation",
        description="Evaluate rankings and plan relevance-judging campaigns.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command in COMMANDS:
        importlib.import_module(COMMANDS[command]).register(subparsers)
        return parser
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).register(subparsers)
    for module_name in _OPTIONAL_COMMAND_MODULES:
        if importlib.util.find_spec(module_name) is not None:
            importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv`, run the chosen command and return its exit status."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    # The command is the first argument (the top-level parser has no options but --help).
    args = build_parser(arguments[0] if arguments else None).parse_args(arguments)
    try:
        return int(args.handler(args) or 0)
    except InputFileError as error:
        print(error, file=sys.stderr)  # already "FILE:LINE: reason"
        return BAD_INPUT_STATUS
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return BAD_INPUT_STATUS
    except BrokenPipeError:
        # The reader is gone: no traceback, and no second error when Python flushes stdout at
        # exit (the recipe of the signal module's documentation).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_STATUS


if __name__ == "__main__":
    sys.exit(main())
