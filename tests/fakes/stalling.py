"""A scripted builder that stalls in its first model call while a stall is on offer.

Its stall folder is ``$CADILLAC_TEST_STALL_DIR``; the test writes ``stalls`` there (how many
builds may stall). A build whose first call claims a ``slot-<i>`` (made exclusively, so
each is claimed once) writes its process id into it and sleeps, the way a build waits on a
slow model, until it is stopped or killed; every other call builds as
:func:`tests.fakes.improve_policies.sentence_builder` does. So a test knows which process
runs a stalled build, and can stop or kill it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.fakes.improve_policies import sentence_builder

STALL_S = 120.0


def _claim() -> Path | None:
    folder = os.environ.get("CADILLAC_TEST_STALL_DIR")
    if not folder:
        return None
    try:
        stalls = int((Path(folder) / "stalls").read_text())
    except (OSError, ValueError):
        return None
    for i in range(stalls):
        slot = Path(folder) / f"slot-{i}"
        try:
            fd = os.open(slot, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return slot
    return None


def stalling_builder(messages, tools):
    if len(messages) <= 2 and _claim() is not None:
        time.sleep(STALL_S)
    return sentence_builder(messages, tools)
