"""The Triton wing: what the grader asks of Triton (grader.tracks.Wing), answered by this
package's modules, each imported when first asked for:

    backend.py     its backends, for the grading process: probes, the interpreter's mode
    bootstrap.py   a worker's Triton before the submission: imported, helpers started
    launches.py    the child's hook on every launcher's `run`: launches proposed, not run
    spellings.py   what a Triton kernel file may spell
    decorators.py  @triton.jit and @triton.autotune, applied by the grader
    constants.py   tl.constexpr(...) and triton.Config(...) of data
    source.py      on a CPU: a kernel's parameters, its launch, its front-end check
    frontend.py    Triton's front end, run in a helper process in compiler mode
    watch.py       the interpreter's loads and stores, for the replay's watch
    binary.py      on a GPU: a launch compiled by the builder, loaded by the replay
"""

from __future__ import annotations

from typing import Any

from grader.tracks import Wing


class Triton(Wing):
    name = "triton"

    # --- the grading process ------------------------------------------------------------

    # Here, not in backend.py: the backends are listed before anything of the language loads.
    summaries = {"cuda": "Triton kernels compiled for the GPU",
                 "cpu": "Triton's interpreter: kernels run on the CPU, one program instance at "
                        "a time"}

    def summary(self, device):
        return self.summaries[device]

    def probe(self, device):
        from grader.languages.triton.backend import probe

        return probe(device)

    def prepare(self, backend):
        from grader.languages.triton.backend import set_mode

        set_mode(backend)

    def note(self, backend):
        return None

    def reason(self, device):
        from grader.languages.triton.backend import reason

        return reason(device)

    def forced(self):
        from grader.languages.triton.backend import forced

        return forced()

    def unavailable(self, missing):
        return f"No backend can run here. {missing}"

    def versions(self):
        from grader.languages.triton.backend import version

        return {"triton": version()}

    def readable(self):
        return []  # Triton's compiler and libraries lie inside its Python package

    # --- a worker's bootstrap -----------------------------------------------------------

    preload = ("triton",)

    def warm(self):
        from grader.languages.triton.bootstrap import warm

        warm()

    def bind(self, role, device):
        from grader.languages.triton.bootstrap import bind

        bind(role, device)

    # --- the child ------------------------------------------------------------------------

    def hook_launches(self):
        from grader.languages.triton.launches import install

        install()

    def dtype_name(self, value):
        from grader.languages.triton.launches import dtype_name

        return dtype_name(value)

    def build_offline(self, launches, archs):
        raise NotImplementedError("Triton kernels are built on the GPU that runs them")

    # --- a kernel file --------------------------------------------------------------------

    @property
    def spellings(self):
        from grader.languages.triton.spellings import TRITON

        return TRITON

    helpers_are_tile_code = False  # Triton would call an undecorated helper as Python

    def decorate(self, function, spelling, options, node, interpreted):
        from grader.languages.triton.decorators import decorate

        return decorate(function, spelling, options, node, interpreted)

    @property
    def constructors(self):
        from grader.languages.triton.constants import CONSTRUCTORS

        return CONSTRUCTORS

    def dtype(self, name: str) -> Any:
        import triton.language as tl

        found = getattr(tl, name, None)
        return found if isinstance(found, tl.dtype) else None

    def parameters(self, kernel):
        from grader.languages.triton.source import parameters

        return parameters(kernel)

    def optional(self, kernel):
        from grader.languages.triton.source import optional

        return optional(kernel)

    # --- the replay on a CPU --------------------------------------------------------------

    def front_end(self, step, kernel, args, kwargs, path):
        from grader.languages.triton.source import front_end

        return front_end(step.kernel, kernel, args, kwargs, path)

    def launch(self, step, kernel, args, kwargs):
        from grader.languages.triton.source import launch

        launch(step, kernel, args, kwargs)

    def watch(self, watch, launch, grid, notes):
        from grader.languages.triton.watch import hooks

        return hooks(watch, launch, grid, notes)

    def runtime(self, filename):
        # Its interpreter's own failures are named as the language's.
        return "kernel language" if filename.endswith("triton/runtime/interpreter.py") else None

    # --- on a GPU -------------------------------------------------------------------------

    def build(self, kernel, args, kwargs, grid):
        from grader.languages.triton.binary import build

        return build(kernel, args, kwargs)

    def disassemblers(self):
        import importlib.util
        import os

        # Triton ships NVIDIA's tools beside its own ptxas, the one its cubins were made by.
        spec = importlib.util.find_spec("triton")
        folders = (spec.submodule_search_locations or []) if spec else []
        return [os.path.join(f, "backends", "nvidia", "bin", "nvdisasm") for f in folders]

    def load_binary(self, record, files, folder, kept, name):
        from grader.languages.triton.binary import TritonBinary

        return TritonBinary(record, files, folder)

    @property
    def skipped(self):
        from grader.languages.triton.binary import SKIPPED

        return SKIPPED


WING = Triton()
