"""Project tools that are not part of any tier: `python -m tools.exercises` writes the workspace."""
