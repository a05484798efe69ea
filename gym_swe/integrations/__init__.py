"""Plugs into other libraries and RL stacks: TRL, Ray, atropos, verifiers, SkyRL. Each module imports its
library where used, with an install hint."""
