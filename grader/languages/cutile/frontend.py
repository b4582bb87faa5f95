"""What cuTile's compiler says about a kernel that, on a CPU, only the simulator ran.

The simulator runs a kernel body as Python, so a body that calls PyTorch on the host (or
anything else no GPU compiler accepts) would run there. Each kernel launched on a CPU is
therefore also lowered to Tile IR bytecode, architecture-independent, which is what
tileiras would then compile, and which needs no GPU (`check`): the compiler's message when
it rejects the kernel, None when it accepts it, asked once per kernel and signature.
`Unavailable` (grader.tracks) says that this cuda-tile offers no front end the grader knows
how to call: the check is then not made, and grading says so.
"""

from __future__ import annotations

import io
from pathlib import Path

from grader.languages.cutile.build import signatures
from grader.replay.locate import message, rejection
from grader.tracks import Unavailable

_checked: dict[tuple, str | None] = {}


def front_end_check(kernel, args: tuple) -> str | None:
    """Lower a simulated cuTile kernel to Tile IR bytecode with the arguments of a launch."""
    try:
        from cuda.tile.compilation import export_kernel
    except ImportError as exc:
        raise Unavailable(f"this cuda-tile has no export_kernel ({exc})") from None
    try:
        (found, sigs), = signatures([(kernel, args)]).values()
    except Exception as exc:  # noqa: BLE001 - arguments cuTile has no type for
        return message(exc)
    key = (id(found), repr(sigs))
    if key not in _checked:
        try:
            export_kernel(found, sigs, io.BytesIO(), gpu_code=None,
                          output_format="tileir_bytecode")
            _checked[key] = None
        except Exception as exc:  # noqa: BLE001 - the compiler's rejection is the answer
            filename = getattr(getattr(exc, "loc", None), "filename", None)
            _checked[key] = rejection(exc, Path(filename) if filename else None)
    return _checked[key]
