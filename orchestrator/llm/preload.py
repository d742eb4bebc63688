"""Imported by the fork server of a matrix run's worker processes, before it forks a build:
litellm with cadillac's back ends registered (offline-safe:
:func:`orchestrator.llm.client.litellm_module`).

litellm alone takes some 3.5 s of CPU to import, which every build of a run paid again
before its first model call, a ``scripted:`` one too; a forked worker now starts with it in
memory. Importing litellm starts no thread, so the server may still fork. (The fork server
imports cadillac's build and matrix code too: :data:`orchestrator.bench.engines.local.PRELOAD`.)
"""

from __future__ import annotations

from orchestrator.llm.client import litellm_module

litellm_module()
