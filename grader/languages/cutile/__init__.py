"""cuTile's wing: what the grader asks of cuTile (grader.tracks.Wing), answered by this
package's modules, each imported when first asked for:

    backend.py        its backends, for the grading process: probes, the toolchain's repair
    launches.py       the child's hook on ct.launch: launches proposed (or captured), not run
    spellings.py      what a cuTile kernel file may spell
    constants.py      ct.ByTarget(...) of data
    source.py         on a CPU: a kernel's parameters and its launch in the simulator
    frontend.py       cuTile's front end: a kernel lowered to Tile IR, no GPU needed
    watch.py          the simulator's loads and stores, for the replay's watch
    binary.py         on a GPU: a launch compiled by the builder, loaded by the replay
    simulator/        the CPU simulator of cuda.tile (`--backend cutile-sim`), a module per concern
    toolchain.py      tileiras and CUDA_HOME: found, probed with a tiny kernel, the answer cached
    build.py          cuTile kernels built to cubins per architecture (no GPU needed)
    probe_kernel.py   the tiny kernel the probe builds
    compile_check.py  `grade compile`: cuTile builds per architecture, believed only with cubins
"""

from __future__ import annotations

from pathlib import Path

from grader.tracks import Wing

_SIMULATOR = Path(__file__).resolve().parent / "simulator"


class CuTile(Wing):
    name = "cutile"

    # --- the grading process ------------------------------------------------------------

    # Here, not in backend.py: the backends are listed before anything of the language loads.
    summaries = {"cuda": "cuTile kernels compiled by tileiras for the GPU",
                 "cpu": "cuTile kernels run by the grader's simulator on the CPU, block by block"}

    def summary(self, device):
        return self.summaries[device]

    def probe(self, device):
        from grader.languages.cutile.backend import probe

        return probe(device)

    def prepare(self, backend):
        from grader.languages.cutile.backend import prepare

        prepare(backend)

    def note(self, backend):
        from grader.languages.cutile.backend import note

        return None if backend.interpret else note()

    def reason(self, device):
        from grader.languages.cutile.backend import reason

        return reason(device)

    def forced(self):
        return None

    def unavailable(self, missing):
        return f"The cuTile track cannot be graded here: {missing}"

    def versions(self):
        from grader.languages.cutile.toolchain import cuda_tile_version

        return {"cuda_tile": cuda_tile_version()}

    def readable(self):
        import os
        import shutil

        tileiras = shutil.which("tileiras")
        # Its toolchain's folder: tileiras finds ptxas and libnvvm beside its bin/.
        return [os.path.dirname(os.path.dirname(os.path.realpath(tileiras)))] if tileiras else []

    # --- a worker's bootstrap -----------------------------------------------------------

    preload = ()  # cuda.tile is imported by the workers of the cuTile track alone

    def bind(self, role, device):
        try:
            import cuda.tile  # noqa: F401
        except ImportError:
            pass  # the submission's own import then says what is missing
        if device == "cpu":
            from grader.languages.cutile import simulator

            simulator.install()  # ct.launch runs kernels in the simulator, on the CPU

    # --- the child ------------------------------------------------------------------------

    def hook_launches(self):
        from grader.languages.cutile.launches import install

        install()

    def dtype_name(self, value):
        return None  # a kernel is given no dtype as an argument

    def build_offline(self, launches, archs):
        from grader.languages.cutile.build import build_kernels

        return build_kernels(launches, archs)

    # --- a kernel file --------------------------------------------------------------------

    @property
    def spellings(self):
        from grader.languages.cutile.spellings import CUTILE

        return CUTILE

    helpers_are_tile_code = True  # cuTile compiles what a kernel calls as tile code

    def decorate(self, function, spelling, options, node, interpreted):
        from grader.languages.cutile.spellings import CUTILE
        from grader.replay.spellings import lookup

        return lookup(spelling, CUTILE)(function, **options)  # @ct.kernel, @ct.function

    @property
    def constructors(self):
        from grader.languages.cutile.constants import CONSTRUCTORS

        return CONSTRUCTORS

    def dtype(self, name):
        return None

    def parameters(self, kernel):
        from grader.languages.cutile.source import parameters

        return parameters(kernel)

    def optional(self, kernel):
        from grader.languages.cutile.build import cutile_defaults

        return cutile_defaults(kernel)

    # --- the replay on a CPU --------------------------------------------------------------

    def front_end(self, step, kernel, args, kwargs, path):
        from grader.languages.cutile.frontend import check

        return check(kernel, args)

    def launch(self, step, kernel, args, kwargs):
        from grader.languages.cutile.source import launch

        launch(step, kernel, args, kwargs)

    def watch(self, watch, launch, grid, notes):
        from grader.languages.cutile.watch import hooks

        return hooks(watch, launch, grid, notes)

    def runtime(self, filename):
        return "cuTile simulator" if Path(filename).resolve().parent == _SIMULATOR else None

    # --- on a GPU -------------------------------------------------------------------------

    def build(self, kernel, args, kwargs, grid):
        from grader.languages.cutile.binary import build

        return build(kernel, args, grid)

    def disassemblers(self):
        import os

        # tileiras's toolkit, where it has NVIDIA's other tools beside it.
        return [os.path.join(folder, "bin", "nvdisasm") for folder in self.readable()]

    def load_binary(self, record, files, folder, kept, name):
        from grader.languages.cutile.binary import CutileBinary

        return CutileBinary(record, files, kept, name)

    skipped = ()  # no autotuner: every launch has one binary


WING = CuTile()
