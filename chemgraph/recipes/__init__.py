"""Runnable recipes (the YAML definitions live in the top-level ``recipes/`` folder)."""
