"""The judge: benchmark matrices, hidden-check scoring and the rule that decides a patch."""
