"""The grader's replay of a submission: its kernels, rebuilt from source, run on the launches
its wrapper proposed.

The student's wrapper runs in the confined child (grader.sandbox) on the grader's inputs, but
what comes out of it is only a proposal (`proposal.Proposal`): plain data naming the kernels
it launched, their grids and arguments, the few allowed host steps between launches, and the
tensor it returned. A second confined process, in which no student host code ever ran,
rebuilds the file's kernels from its source (`kernels`), checks them with the real
compiler's front end, and runs the proposal on fresh inputs (`execute`). Only that run's
output and times count.

The package's own import is empty: the Triton front end's helper process imports
grader.replay.frontends and grader.replay.kernels without PyTorch.
"""
