"""How `grade`'s command line is read: stage names as commands, grading options before or
after the stage, and the grading options themselves (click only)."""

from __future__ import annotations

from pathlib import Path

import click

from grader.backends import selection as backends
from grader.cli.lazy import LazyGroup
from grader.tracks import TRACKS


class GradeGroup(LazyGroup):
    """`grade stage3` is short for `grade stage stage3`: unknown command names are stages.
    Grading options may stand before the stage too: `grade --track cutile 1`. Its commands
    are loaded when used (grader.cli.lazy); the hidden `stage` command is read for the
    grading options on every line, so its module imports nothing heavy."""

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, self._grading_options_after_command(ctx, list(args)))

    def _grading_options_after_command(self, ctx, args: list[str]) -> list[str]:
        """Move grading options (and their values) that precede the command or stage name to
        just after it, where the command's own parser reads them."""
        grading = {name: p for p in self.get_command(ctx, "stage").params
                   if isinstance(p, click.Option) for name in p.opts}
        ours = {name for p in self.params if isinstance(p, click.Option) for name in p.opts}
        before, moved, i = [], [], 0
        while i < len(args) and args[i].startswith("-") and args[i] != "--":
            name = args[i].split("=", 1)[0]
            option = grading.get(name) if name not in ours else None
            target = moved if option else before
            target.append(args[i])
            value = not option.is_flag if option else name == "--course"
            if value and "=" not in args[i]:
                if i + 1 >= len(args):
                    raise click.UsageError(_needs_value(name, option))
                target.append(args[i + 1])
                i += 1
            i += 1
        if not moved:
            return args
        if any(a in ("-h", "--help") for a in before):
            return ["--help"]  # the group's help lists the grading options too
        if i >= len(args):
            raise click.UsageError(f"{moved[0]} is a grading option: name the stages to grade "
                                   f"too, e.g. `grade {' '.join(moved)} 1` or `grade all "
                                   f"{' '.join(moved)}`.")
        return before + [args[i]] + moved + args[i + 1:]

    def format_options(self, ctx, formatter):
        super().format_options(ctx, formatter)
        records = [p.get_help_record(ctx) for p in self.get_command(ctx, "stage").params
                   if isinstance(p, click.Option)]
        with formatter.section("Grading options (before or after the stage: grade --track cutile 1)"):
            formatter.write_dl([r for r in records if r])

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.list_commands(ctx) and not args[0].startswith("-"):
            return "stage", self.get_command(ctx, "stage"), args
        return super().resolve_command(ctx, args)

    def format_usage(self, ctx, formatter):
        formatter.write_usage(
            "grade", "[--course PATH] STAGE... | all | list | doctor | compile | calibrate | release "
            "| autograder | batch | skeletons [OPTIONS]")


# A value each option could take, for the examples in messages.
EXAMPLES = {"--json": "results.json", "--junit": "results.xml", "--gradescope": "results.json",
            "--markdown": "summary.md", "--summary": "summary.md",
            "--fail-on": "failure", "--benchmark-json": "benchmark.json",
            "--submission": "my_work", "--seed": "1234", "--timeout": "30",
            "--backend": "triton-interpret", "--track": "cutile", "--course": "course.toml"}


def _needs_value(name: str, option: click.Option | None, graded: str = "1") -> str:
    """An option given last, without its value: say what it takes, with an example that
    would work (`grade --json` is not asking to grade a stage called --json)."""
    example = f"{name} {EXAMPLES.get(name, 'VALUE')}"
    command = f"grade {example} {graded}" if option is None else f"grade {graded} {example}"
    return f"{name} needs {_value_kind(option)}; for example `{command}`."


def _value_kind(option: click.Option | None) -> str:
    kind = option.type if option is not None else click.Path(dir_okay=False)
    if isinstance(kind, click.Path):
        if kind.file_okay and kind.dir_okay:
            return "a folder or a file"
        return "a folder" if not kind.file_okay else "a file path"
    if isinstance(kind, click.Choice):
        *others, last = map(str, kind.choices)
        return f"one of {', '.join(others)} or {last}"
    if isinstance(kind, (click.IntRange, click.FloatRange)) or kind in (click.INT, click.FLOAT):
        return "a number"
    return "a value"


class GradingCommand(click.Command):
    """`grade all` and `grade STAGE...`: an option given last without its value is told what
    it takes, rather than click's "requires an argument"."""

    def parse_args(self, ctx, args):
        options = {name: p for p in self.params if isinstance(p, click.Option) for name in p.opts}
        last = options.get(args[-1]) if args else None
        if last is not None and not last.is_flag and not last.count:
            stages = _arguments(args, options) if ctx.info_name == "stage" else []
            raise click.UsageError(_needs_value(args[-1], last, stages[0] if stages else
                                                ctx.info_name))
        return super().parse_args(ctx, args)


def _arguments(args: list[str], options: dict[str, click.Option]) -> list[str]:
    """The words of `args` that are neither options nor an option's value."""
    found, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            option = options.get(arg)
            skip = option is not None and not option.is_flag and not option.count
        else:
            found.append(arg)
    return found


class _StageContext(click.Context):
    """`grade 1` runs the hidden `stage` command; what it prints names `grade` alone."""

    @property
    def command_path(self) -> str:
        return self.parent.command_path if self.parent else super().command_path


class StageCommand(GradingCommand):
    """The hidden command behind `grade STAGE...`: its usage is `grade`'s own."""

    context_class = _StageContext

    def format_usage(self, ctx, formatter):
        group = ctx.parent.command if ctx.parent else None
        if isinstance(group, GradeGroup):
            group.format_usage(ctx.parent, formatter)
        else:
            super().format_usage(ctx, formatter)


# --fail-on's choices, what makes `grade` exit 1 rather than 0 (grader.cli.requested.exit_code).
FAIL_ON = ("unfinished", "failure", "never")


def _not_empty(ctx, param, value: Path | None) -> Path | None:
    """An empty value (an unset variable: `--summary "$GITHUB_STEP_SUMMARY"` outside GitHub
    Actions) names no file; say so rather than fail on the current folder."""
    if value is not None and str(value) in ("", "."):
        raise click.BadParameter("names no file: name one (outside GitHub Actions, "
                                 "$GITHUB_STEP_SUMMARY is not set; leave --summary out "
                                 "or use --markdown summary.md)", ctx, param)
    return value


def grading_options(command):
    """The options of `grade STAGE...` and `grade all`."""
    options = [
        click.option("--backend", type=click.Choice(backends.CHOICES), default=backends.AUTO,
                     show_default=True,
                     help="Where kernels run. auto: on a GPU, cuTile where cuda-tile runs "
                          "there, else Triton; without one, Triton's interpreter (or, with "
                          "--track cutile, the cuTile simulator); TRITON_INTERPRET=1 forces "
                          "the interpreter. The scorecard says which was picked and why."),
        click.option("--track", type=click.Choice(TRACKS),
                     help="The tile language to grade (with --backend auto): on a GPU the "
                          "compiled backend, on a CPU Triton's interpreter or the cuTile "
                          "simulator."),
        click.option("--solutions", is_flag=True,
                     help="Grade the reference solutions instead of exercises/ (instructors)."),
        click.option("--submission", type=click.Path(exists=True, path_type=Path),
                     help="Grade a submission instead of exercises/: a folder or a .zip "
                          "whose stage files are laid out like exercises/ (inside one top "
                          "folder or not) or bare at its top, as a drag-and-drop upload "
                          "brings them (their track told by what they import), or one stage "
                          "file. A stage file it lacks is graded as the handout's skeleton "
                          "(NOT STARTED)."),
        click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="Also write the full result as JSON to this file."),
        click.option("--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="Also write JUnit XML (one test case per graded check) for CI."),
        click.option("--gradescope", "gradescope_path",
                     type=click.Path(dir_okay=False, path_type=Path),
                     help="Also write Gradescope's results.json."),
        click.option("--gradescope-metadata", "gradescope_metadata",
                     type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="With --gradescope: Gradescope's submission_metadata.json, whose "
                          "times and earlier submissions apply the class's late penalty and "
                          "resubmission limit ([policy] in course.toml) to results.json."),
        click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="Also write the Markdown scorecard to this file, replacing it "
                          "(--summary adds to a file instead)."),
        click.option("--summary", "summary_path", type=click.Path(dir_okay=False, path_type=Path),
                     callback=_not_empty,
                     help="Also append the Markdown scorecard to this file, created where "
                          "missing: a CI job's summary, `--summary \"$GITHUB_STEP_SUMMARY\"` "
                          "(--markdown replaces its file; this adds to it)."),
        click.option("--fail-on", type=click.Choice(FAIL_ON), default="unfinished",
                     show_default=True,
                     help="What makes the exit code 1. unfinished: any stage short of a full "
                          "pass, NOT STARTED ones included (are you done?). failure: a started "
                          "stage that fails, errors or, where speed is graded, is too slow; "
                          "NOT STARTED stages and what this machine cannot grade do not count "
                          "(for CI: green until a started stage fails). never: 0 whenever "
                          "grading finished (the result files say how it went)."),
        click.option("--picture", "picture_dir", type=click.Path(file_okay=False, path_type=Path),
                     help="Also draw each failing case's output, element by element (or "
                          "by blocks where it is large: wrong, never written, written by "
                          "several programs, by a program out of bounds; hover for which "
                          "program stored it) as a page, DIR/failures.html, to open in a "
                          "browser."),
        click.option("--profile", is_flag=True,
                     help="Also show where the grading's time went, stage by stage: starting "
                          "and loading the processes, the correctness cases, the checks, each "
                          "phase of the speed trials (by the grader's clock; also in --json)."),
        click.option("-v", "--verbose", is_flag=True,
                     help="Show every failing case, every line the submission printed, and "
                          "the versions and sandbox protections it was graded with."),
        click.option("--seed", type=click.IntRange(0, 2**31 - 1),
                     help="Draw the inputs from this seed (default: a fresh one, printed on the "
                          "scorecard, so a failure can be reproduced)."),
        click.option("--timeout", type=click.FloatRange(1),
                     help="Seconds one call of a submission may take before it fails (timeout); "
                          "the stage's later cases are then not run, unless --keep-going. "
                          "Default: the stage's time_limit in course.toml (on the CPU or the "
                          "GPU)."),
        click.option("--keep-going", is_flag=True,
                     help="Run every case of a stage even after one timed out (each may cost "
                          "the whole --timeout)."),
        click.option("--json-so-far", "so_far_path", hidden=True,
                     type=click.Path(dir_okay=False, path_type=Path),
                     help="Rewrite this JSON file with the stages graded so far after each "
                          "stage (grade batch: kept when a submission runs out of --limit)."),
        click.option("--benchmark-json", type=click.Path(dir_okay=False, path_type=Path),
                     help="Write pytest-benchmark's record of the timed speed cases (GPU only); "
                          "compare two with `pytest-benchmark compare A.json B.json`."),
    ]
    for option in reversed(options):
        command = option(command)
    return command
