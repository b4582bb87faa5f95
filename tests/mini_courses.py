"""A one-stage course of matmul for tests of how course.toml's hypotheses load: its text,
with the one hypothesis's cause and probe given."""

from conftest import RULES

STAGE = """
[[stages]]
id = "matmul"
title = "Matmul"
points = 10
modules = { triton = "triton/stage4_matmul.py", cutile = "cutile/stage4_matmul.py" }
tolerance.float32 = { atol = 1e-4, rtol = 1e-4 }
cases = [ { M = 65, N = 33, K = 47, dtypes = ["float32"] },
          { M = 65, N = 33, K = 47, layout = "sliced", dtypes = ["float32"] } ]
"""


def matmul_course(probe: str, cause: str = "accumulator_added_twice") -> str:
    """The course's text, its hypothesis `cause` with `probe = { <probe> }`."""
    hypothesis = (f'\n[[stages.hypotheses]]\ncause = "{cause}"\n'
                  f'experiment = "accumulator_added_twice"\nprobe = {{ {probe} }}\nsays = "x"\n')
    return '\n[course]\ntitle = "mini"\n\n' + RULES + "\n" + STAGE + hypothesis
