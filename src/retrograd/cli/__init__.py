"""Subcommands of the ``retrograd`` command (one module each)."""
