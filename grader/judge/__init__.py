"""Verdicts: what the grader concludes from the evidence a submission's child sends back.

    compare.py        one output against its float32 reference: which elements, which tiles
    stage.py          each case of a stage (two calls, every trace checked); the memory check

(`grade compile`'s verdicts on cuTile builds are grader.languages.cutile.compile_check's.)
"""
