"""The ``hoibench`` command: thin sub-commands that parse arguments, call public functions and
render results. Sub-command groups live in sibling modules and are imported lazily, so
``hoibench data info`` never imports the evaluator, the runners or matplotlib.

Every command turns bad input into one line on stderr and a non-zero exit code.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

import click

from hoibench._exceptions import HOIBenchError

__all__ = ["cli", "main"]

#: command name → "module:attribute"; a module that does not exist yet is simply not listed
LAZY_COMMANDS: dict[str, str] = {
    "data": "hoibench.cli.data:data",
    "eval": "hoibench.cli.eval:eval_group",
    "split": "hoibench.cli.split:split",
    "mcq": "hoibench.cli.mcq:mcq",
    "analyze": "hoibench.cli.analyze:analyze",
    "augment": "hoibench.cli.augment:augment",
    "report": "hoibench.cli.report:report",
    "demo": "hoibench.cli.demo:demo",
    "release": "hoibench.cli.release:release",
    "verify": "hoibench.cli.verify:verify",
    "export": "hoibench.cli.export:export",
    "detect": "hoibench.cli.detect:detect",
}


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported only when used.

    ``lazy_commands`` maps a command name to ``"module:attribute"``; commands whose module does
    not exist are not listed (so each feature's CLI lives in its own module).
    """

    def __init__(self, *args: Any, lazy_commands: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = LAZY_COMMANDS if lazy_commands is None else lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        eager = super().list_commands(ctx)
        lazy = [n for n, target in self.lazy_commands.items()
                if importlib.util.find_spec(target.split(":")[0]) is not None]
        return eager + [n for n in lazy if n not in eager]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        eager = super().get_command(ctx, cmd_name)
        if eager is not None:
            return eager
        target = self.lazy_commands.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        if importlib.util.find_spec(module) is None:
            return None
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hoibench")
def cli() -> None:
    """hoibench: build, run and score Human-Object Interaction benchmarks."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


#: glibc's mallopt parameters: the size from which a block gets its own mmap, and how much free
#: memory at the top of the heap is kept for reuse instead of being handed back to the kernel
_M_MMAP_THRESHOLD = -3
_M_TRIM_THRESHOLD = -1
#: the free memory kept at the heap's top (glibc: 128 KiB once a threshold is set; 32 MiB gave
#: ``eval hico`` 74k page faults, 48 MiB 68k, 64 and 128 MiB 63k)
_TRIM_KEEP = 64 << 20


def reuse_freed_memory() -> bool:
    """Have glibc serve blocks up to 32 MiB from its heap, where freed memory is reused, from the
    start. By default the threshold starts at 128 KiB and only adapts after frees, so the
    first numpy temporaries each get a fresh ``mmap``, unmapped when freed, whose pages fault in
    anew: ~10 us per 4 KiB page on a virtual machine (``eval hico`` on 1M detections: 0.4-0.8 s
    of system time, 0.2-0.3 s with this). 32 MiB is glibc's own ceiling for that adaptation;
    larger blocks keep their own mapping, returned when freed, so the peak does not grow
    (a 1 GiB threshold took ``eval vcoco``'s from 0.85 to 1.1 GB).

    Setting a threshold also stops glibc adapting its trim threshold, which stays at 128 KiB: every
    free at the top of the heap above that went back to the kernel and was faulted in again by
    the next array. Up to 64 MiB of it is kept instead (``eval hico`` on 1M detections: 88k ->
    63k page faults, the same peak). Linux with glibc only; a ``MALLOC_MMAP_THRESHOLD_`` or
    ``MALLOC_TRIM_THRESHOLD_`` set by the user is left alone. Returns whether the first was set."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # another C library (musl)
        return False
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        mallopt(_M_TRIM_THRESHOLD, _TRIM_KEEP)
    return "MALLOC_MMAP_THRESHOLD_" not in os.environ and bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20))


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``hoibench`` script: one-line errors, never a traceback.

    Set ``HOIBENCH_DEBUG=1`` to see the traceback of an unexpected error.
    """
    reuse_freed_memory()
    debug = os.environ.get("HOIBENCH_DEBUG") == "1"
    try:
        return cli.main(args=argv, prog_name="hoibench", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "hoibench"
        click.echo(f"error: {_one_line(exc.format_message())} (try '{where} --help')", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"error: {_one_line(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)
    except HOIBenchError as exc:
        click.echo(f"error: {_one_line(exc)}", err=True)
        sys.exit(2)
    except (OSError, ValueError, KeyError, TypeError, ImportError) as exc:
        if debug:
            raise
        click.echo(f"error: {type(exc).__name__}: {_one_line(exc)}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:
        if debug:
            raise
        click.echo(f"internal error: {type(exc).__name__}: {_one_line(exc)} "
                   "(set HOIBENCH_DEBUG=1 for the traceback)", err=True)
        sys.exit(3)
