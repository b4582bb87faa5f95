"""cuTile's wing: the code the grader has for cuTile only.

    simulator/  the CPU simulator of cuda.tile (`--backend cutile-sim`), a module per concern
"""
