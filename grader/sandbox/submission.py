"""A submission loaded in this process: importing its module and recording its wrapper.

The grader itself never calls this on student code: the confined child process of
grader.sandbox does (`record`). Instructor scripts (scripts/) call the references directly
(`bound`), with their kernels run as usual.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

import torch

from grader.course import SubmissionRules
from grader.sandbox import launches
from grader.replay.locate import describe
from grader.sandbox.host import HostWatch
from grader.sandbox.outcomes import Proposed
from grader.sandbox.recorder import Recorder

_serial = itertools.count()


class SubmissionError(Exception):
    """The submission cannot be loaded; the message is meant for its author."""


class Submission:
    """Loads one submission module and calls its graded function."""

    def __init__(self, path: Path, function: str):
        self.path = Path(path).resolve()
        self.function_name = function
        self._function = None

    def load(self) -> None:
        if not self.path.is_file():
            raise SubmissionError(f"{self.path} does not exist.")
        # A fresh module name each time: two submissions of one stage never share state.
        name = f"tilecourse_submission_{next(_serial)}_{self.path.stem}"
        spec = importlib.util.spec_from_file_location(name, self.path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # triton's JIT looks its module up while compiling
        try:
            spec.loader.exec_module(module)
        except SyntaxError as exc:
            raise SubmissionError(
                f"{self.path.name} has a syntax error at line {exc.lineno}: {exc.msg}."
            ) from None
        except Exception as exc:  # noqa: BLE001 - any import failure is the student's to see
            raise SubmissionError(
                f"importing {self.path.name} failed: {describe(exc, self.path)}") from None
        function = getattr(module, self.function_name, None)
        if not callable(function):
            raise SubmissionError(
                f"{self.path.name} must define a function `{self.function_name}`; it does not."
            )
        self._function = function
        self._module = module

    def record(self, args: tuple, kwargs: dict, rules: SubmissionRules,
               names: list[str]) -> Proposed:
        """Call the wrapper under the host watch (grader.sandbox.host) with its launches
        written down, not run (grader.sandbox.recorder); `names` name the tensor arguments,
        in order."""
        outcome = Proposed()
        tensors = [v for v in [*args, *kwargs.values()] if isinstance(v, torch.Tensor)]
        recorder = Recorder(vars(self._module), list(zip(names, tensors)))
        host = HostWatch(rules, list(zip(names, tensors)), recorder)
        session = launches.Session(host, recorder)
        output = None
        with host, launches.recording(session), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                output = self._function(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - a failing call is a graded outcome
                outcome.error = describe(exc, self.path)
            host.finish(output)
        outcome.proposal = recorder.finish(output).to_json()
        outcome.refused, outcome.refused_launch = recorder.refused, recorder.refused_launch
        outcome.launches = session.count
        outcome.host = host.violations
        return outcome

    def bound_function(self) -> Callable:
        """The graded function itself, without instrumentation, for timing."""
        return self._function

    def bound(self, args: tuple, kwargs: dict) -> Callable[[], Any]:
        """A zero-argument call of the submission without instrumentation, for timing."""
        function = self._function
        return lambda: function(*args, **kwargs)

    def capture(self, args: tuple, kwargs: dict) -> list[tuple[Any, tuple]]:
        """Call the function with its launches captured instead of run: (kernel, arguments)
        of each launch. Needs no GPU (CUDA's current stream is None meanwhile), so kernels
        can be built for `grade compile` on a CPU."""
        session = launches.Session(capture=True)
        saved = torch.cuda.current_stream
        torch.cuda.current_stream = lambda *a, **k: None
        try:
            with launches.recording(session):
                self._function(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported to the student
            raise SubmissionError(
                f"calling {self.function_name} to capture its launches failed: "
                f"{describe(exc, self.path)}"
            ) from None
        finally:
            torch.cuda.current_stream = saved
        return session.captured
