"""cuTile's launches in the child (grader.sandbox.launches): its launch function hooked, both
in `cuda.tile` and in the extension module it comes from, so that a submission that
imported `launch` under another name goes through the hook too. Inside a recording session
a launch is proposed (or, for `grade compile`, captured) and not run."""

from __future__ import annotations

from grader.sandbox import launches as recording


def build_offline(launches: list, archs: tuple[str, ...]) -> tuple[dict, dict]:
    """`grade compile`: the captured launches built for each architecture, no GPU needed."""
    from grader.languages.cutile.build import build_kernels

    return build_kernels(launches, archs)


def hook_launches() -> None:
    import cuda.tile as ct
    import cuda.tile._cext as cext

    hooked = _hooked(ct.launch)
    ct.launch = cext.launch = hooked


def _hooked(original):
    def launch(stream, grid, kernel, kernel_args, *more, **options):
        session = recording.current()
        if session is None:
            return original(stream, grid, kernel, kernel_args, *more, **options)
        if session.capture:
            session.captured.append((kernel, tuple(kernel_args)))
            return None
        # cuTile's own launch takes tuples only ("Grid must be a tuple"): a proposal holds
        # what cuTile accepts, so that the simulator and the GPU agree.
        for what, value, says in (("grid", grid, "Grid must be a tuple"),
                                  ("kernel arguments", kernel_args,
                                   "launch expects a tuple as the fourth argument")):
            if not isinstance(value, tuple):
                given = type(value).__name__
                session.refuse(
                    "cutile", kernel, tuple(kernel_args) if isinstance(kernel_args, (tuple, list)) else (),
                    {}, f"ct.launch takes its {what} as a tuple, and cuTile refuses "
                    f"{'an' if given[:1] in 'aeiou' else 'a'} {given} there (\"{says}\"): write "
                    f"({'n' if what == 'grid' else 'a, b'},) with the trailing comma for one "
                    "element")
                return None
        if empty := _empty_dimension(grid):
            # CUDA launches no grid without a block along each dimension: refused here, at
            # the launch's line, not in the replay (which knows no line of the wrapper).
            session.refuse("cutile", kernel, tuple(kernel_args), {}, empty)
            return None
        session.propose("cutile", kernel, grid, kernel_args, {})
        return None

    return launch


def _empty_dimension(grid: tuple) -> str | None:
    """Why a grid with no block along a dimension cannot launch, or None."""
    for i, size in enumerate(grid):
        if isinstance(size, int) and not isinstance(size, bool) and size == 0:
            return (f"ct.launch's grid {grid} has no block along dimension {i} (\"Grid[{i}] "
                    "is 0\"), and a grid needs at least one along each: for this case's sizes "
                    "the grid's expression gives 0 (a count rounded down to whole tiles gives "
                    "0 below one tile; ct.cdiv rounds up)")
    return None
