"""The ``dpmean`` command line: ``estimate``, ``budget``, ``demo``, ``reproduce`` and ``ledger``.

Bad input gives one line on stderr, ``dpmean: error: ...``, exit code 2, and no output file.

Layout: ``arguments.py`` holds the parser class, the usage error and the arguments the commands
share (budget, bounds, seed, method and options, output files); each command is one module
(``estimate.py``, ``budget.py``, ``demo.py``, ``reproduce.py``, ``ledger.py``) with
``register(subparsers)``, which adds its parser and sets ``run``, the function that carries it
out and returns the exit code. Adding a command is one module with ``register`` and one entry in
``COMMANDS`` below; ``main`` handles its errors like every other command's. ``interrupts.py``
makes SIGTERM and SIGHUP stop a command as Ctrl-C does.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from .. import __version__
from ..errors import DPMeanError, InsufficientDataWarning
from . import budget, demo, estimate, ledger, reproduce
from .arguments import (
    EXIT_USAGE,
    Parser,
    ParserExit,
    UsageError,
    discard_stdout,
    insufficient_data_error,
    printing,
)
from .interrupts import exit_code, handled_signals, interrupted

__all__ = ["main"]

# In the order of the help's list of commands.
COMMANDS = (estimate, budget, demo, reproduce, ledger)


def main(argv: list[str] | None = None) -> int:
    """Run the ``dpmean`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit code: 0 success, 2 bad input (one ``dpmean: error:`` line on stderr), 130
        interrupted (Ctrl-C), 143 by SIGTERM, 129 by SIGHUP (128 + the signal's number).
    """
    parser = build_parser()
    try:
        with handled_signals(), warnings.catch_warnings():
            # Each run shows its own warnings once (also when main is called again in the
            # same process), as one line each.
            warnings.simplefilter("default")
            warnings.showwarning = _show_warning
            args, extra = parser.parse_known_args(argv)
            if extra:
                # argparse reports them from the top parser, whose help does not list the
                # command's options ("--option NAME 0.3" pointed at 'dpmean --help').
                command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
                raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see 'dpmean "
                                 f"{command} --help')")
            code = args.run(args)
        with printing():
            pass  # flush what the command printed now: a failure at exit is a traceback
        return code
    except ParserExit as done:
        return done.status
    except (UsageError, DPMeanError) as exc:
        return _fail(str(exc), exc)
    except InsufficientDataWarning as exc:
        return _fail(str(insufficient_data_error(exc)), exc)
    except MemoryError as exc:
        # numpy's allocation failure (an n or d too large for this machine): a line, not a
        # traceback. Larger ones are refused before allocating where the command can tell.
        return _fail(f"out of memory: {exc or 'an allocation failed'}", exc)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP (``interrupts``)
        print(_with_notes(f"dpmean: {interrupted(exc)}; nothing was written", exc),
              file=sys.stderr)
        return exit_code(exc)
    except BrokenPipeError:
        # The reader of stdout went away (``dpmean ... | head``): not an error of ours. Point
        # stdout at /dev/null so that Python's flush at exit does not raise again.
        discard_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports it
    except OSError as exc:
        # What the system refused where no check foresaw it (a file name too long for the
        # file system, given to 'ledger init': a traceback, a user trial): one line.
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}", exc)


def build_parser() -> Parser:
    """The ``dpmean`` parser with every command of ``COMMANDS``.

    Returns
    -------
    Parser
        An argparse parser that raises ``UsageError`` and ``ParserExit`` instead of exiting.
    """
    parser = Parser(
        prog="dpmean",
        description="Differentially private mean estimation. Every number printed by "
        "'estimate' is a private release; 'demo' also prints clearly labelled non-private "
        "errors.",
    )
    parser.add_argument("--version", action="version", version=f"dpmean {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    # A warning on the command line is one line for the user, like an error: what and why,
    # not the library's file and source line.
    one_line = " ".join(str(message).split())
    print(f"dpmean: warning: {one_line}", file=sys.stderr)


def _fail(message: str, exc: BaseException | None = None) -> int:
    one_line = " ".join(_with_notes(message, exc).split())
    print(f"dpmean: error: {one_line}", file=sys.stderr)
    return EXIT_USAGE


def _with_notes(message: str, exc: BaseException | None) -> str:
    # A command adds what it had done when the error came (charged a ledger, or not) as notes
    # (``BaseException.add_note``): they end the line, in parentheses.
    notes = getattr(exc, "__notes__", None) or []
    return message + "".join(f" ({note})" for note in notes)
