"""Test runners, one module each (`base` says what a runner is)."""
