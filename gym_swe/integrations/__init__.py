"""Plugs into other libraries: TRL, Ray. Each module imports its library where used, with an install hint."""
