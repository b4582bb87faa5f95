"""The GPU studies: what the grader's timing and the reference kernels do on a real GPU.

One entry point, run from the checkout's folder: `python -m scripts NAME [OPTIONS]`
(`python -m scripts` lists them; `scripts/device-check.sh` runs them in parts). Each study is
a module here with a `main()`; what they share (the course, the references loaded) is in
`scripts.common`, and the corpus of submission files with the course each is graded on
(shared with the tests that grade it on the CPU) in `scripts.corpus_files`. They time and compare, and grade only through the grader's own code.
"""
