"""The inverse planner and the command-line interface.

Every CLI command is a thin shell over functions a notebook user can call directly.
"""
