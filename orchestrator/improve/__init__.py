"""The self-improvement cycle: weaknesses, proposals, trials in worktrees, the cycle."""
