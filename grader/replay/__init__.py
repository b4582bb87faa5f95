"""The grader's replay of a submission: its kernels, rebuilt from source, run on the launches
its wrapper proposed.

The student's wrapper runs in the confined child (grader.sandbox) on the grader's inputs, but
what comes out of it is only a proposal (`proposal.Proposal`): plain data naming the kernels
it launched, their grids and arguments, the few allowed host steps between launches, and the
tensor it returned. A second confined process, in which no student host code ever ran, runs
the proposal on fresh inputs (`execute`). On a CPU it rebuilds the file's kernels from their
source (`kernels`: constants read as data by `literals`, every body checked by spelling in
`bodies`) and checks each launch with the real compiler's front end (`source`); on a GPU a
builder process compiles them and the replay launches only the binaries (`binaries`). Only
that run's output and times count. What is particular to a kernel language (its spellings,
front end, launch, watch hooks and binaries) is its package's (grader.tracks.contract), reached
through grader.tracks.wing.

The package's own import is empty: the Triton front end's helper process imports
grader.replay.kernels, and the modules it reads a file with, without PyTorch.
"""
