"""What the fork server of the worker processes imports once, before it forks any build.

Importing it imports cadillac's build and matrix code and litellm (with cadillac's back
ends registered, offline-safe: :func:`orchestrator.llm.client.litellm_module`), so a
forked worker starts with them in memory: litellm alone takes some 3.5 s of CPU to import,
which every build of a run paid again before its first model call, a ``scripted:`` one
too. Importing litellm starts no thread, so the server may still fork.
"""

from __future__ import annotations

import orchestrator.bench.engines.worker  # noqa: F401
import orchestrator.bench.matrix  # noqa: F401
from orchestrator.llm.client import litellm_module

litellm_module()
