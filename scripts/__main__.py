"""`python -m scripts NAME [OPTIONS]`: run one study; without a name, list them."""

from __future__ import annotations

import importlib
import sys

# name -> (module, what it finds out)
STUDIES = {
    "batch": ("batch_check", "a class graded by `grade batch`, each student against a grading "
                             "alone"),
    "benchmark": ("benchmark", "every reference against PyTorch, by the grader's clock and by "
                               "do_bench"),
    "clockgap": ("clock_gap_check", "why the grader's clock and do_bench disagree"),
    "corpus": ("gpu_corpus", "the bad submissions only a GPU can grade"),
    "fidelity": ("fidelity", "the corpus graded on the GPU and on the CPU: the same verdict, "
                             "case by case"),
    "flush": ("flush_check", "the short references after a zeroing and a reading L2 flush"),
    "placement": ("placement_check", "whether a kernel's time moves with where its inputs lie, "
                                     "or with its process"),
    "repeat": ("repeat_check", "the same verdict every time, and a 10% slower copy told apart"),
    "simdiff": ("cutile_sim_diff", "the cuTile simulator against the GPU, kernel by kernel"),
    "sweep": ("sweep", "variants of the references' TUNE places, side by side"),
    "timing": ("timing_check", "the grader's timing against an in-process CUDA-event figure"),
    "trials": ("trials_table", "how the speed trials of `grade --json` results went, case by "
                               "case"),
    "untuned": ("untuned_check", "the plain solutions against the references' speed points"),
    "wire": ("wire_check", "how fast an output crosses the wire between two processes"),
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "list"):
        width = max(map(len, STUDIES))
        print("usage: python -m scripts NAME [OPTIONS]   (NAME --help: its options)\n")
        print("\n".join(f"  {name:<{width}}  {what}" for name, (_, what) in STUDIES.items()))
        return 0
    name, *rest = argv
    if name not in STUDIES:
        print(f"python -m scripts: no study '{name}'; the studies: {', '.join(STUDIES)}",
              file=sys.stderr)
        return 2
    module = importlib.import_module(f"scripts.{STUDIES[name][0]}")
    sys.argv = [f"python -m scripts {name}", *rest]  # what the study's own parser reads
    return module.main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
