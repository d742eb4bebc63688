"""Nightly runs: the lock and records of a night, scheduling, reports and their charts."""
