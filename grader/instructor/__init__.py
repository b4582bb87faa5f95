"""Instructor tools: exercises from solutions, the handout, thresholds, grading a class.

    skeletons.py   exercises generated from the solutions' markers
    release.py     the student handout: no solutions/, no hidden cases
    calibrate.py   speed thresholds from the references on this GPU
    batch.py       a class of submissions, each isolated, into a gradebook
    handed_in.py   the stage files taken from each submission, kept beside its result
    similarity.py  pairs of those files unusually alike for the class (the class report)
    isolation.py   one submission's grading process: scratch folder, session, time limit, stop
    backups.py     a copy kept before any file a person wrote is replaced
"""
