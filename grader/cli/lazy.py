"""Commands loaded when they are used: click's lazy loading of subcommands.

A group names each command's module and object ("grader.cli.machine:doctor_command") and
keeps its short help as data: `grade --help` lists every command without importing one,
and a command's module (and what it imports: PyTorch, pytest, pydantic) is imported only
when the command runs or its own help is asked for.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import click


@dataclass(frozen=True)
class Lazy:
    """A command of a LazyGroup: where it is, and the short help the group's listing shows
    (None: a hidden command, listed nowhere)."""

    where: str  # "package.module:object"
    short_help: str | None


class LazyGroup(click.Group):
    """A group whose commands (`lazy`: name -> Lazy) are imported when first asked for."""

    def __init__(self, *args, lazy: dict[str, Lazy] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        module, _, name = self.lazy[cmd_name].where.partition(":")
        command = getattr(importlib.import_module(module), name)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[cmd_name].where} is not a click command")
        self.add_command(command, cmd_name)  # loaded once
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their short help, as click lists them, from the group's data
        where a command is not loaded."""
        listed = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name) or _listing(name, self.lazy[name])
            if not command.hidden:
                listed.append((name, command))
        if not listed:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in listed)
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.get_short_help_str(limit))
                                for name, command in listed])


def _listing(name: str, lazy: Lazy) -> click.Command:
    """A stand-in for a command not loaded: what the group's listing reads of it."""
    return click.Command(name, help=lazy.short_help, hidden=lazy.short_help is None)
