"""The tile languages' wings: a package per language (grader.tracks.Wing), reached by the
layers below only through grader.tracks.wing."""
