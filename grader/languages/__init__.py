"""The tile languages' wings: one package per language (grader/languages/<name>/), the code
that is particular to that language, behind the contract of grader.tracks (`Wing`); the
layers below reach a wing only through grader.tracks.wing."""
