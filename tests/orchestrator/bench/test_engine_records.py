"""What crosses between a Ray node and the home, attacked: the records a remote build sends
back and the snapshot and task folder the coordinator sends out.

The coordinator writes a remote build's records into the home; the names come off the
network and from a folder a build's commands wrote beside, so a name that climbs out, an
absolute one, a run id of another shape, or a link already in the way must write nothing
outside the run's folder. Going out, a link in the home's notes or in a task's folder is
never followed: a host file must not travel to a node as a note.
"""

from __future__ import annotations

import os

from orchestrator.bench.engines.ray_engine import snapshot, task_files
from orchestrator.bench.engines.records import collect, write_records

RUN = "20261206-120000-abcdef"


def test_hostile_names_and_links_in_a_remote_builds_records_write_nothing_outside(tmp_path):
    runs = tmp_path / "home" / "runs"
    runs.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("untouched")
    (runs / RUN).mkdir()
    (runs / RUN / "events.jsonl").symlink_to(victim)  # a link already where a record goes
    (runs / RUN / "logs").symlink_to(outside, target_is_directory=True)
    files = {
        "summary.json": b"{}",
        "../escaped.txt": b"x",
        "/abs.txt": b"x",
        "a/../../b.txt": b"x",
        "events.jsonl": b"over the link",
        "logs/inner.txt": b"through the folder link",
        "workspace/app.py": b"the model's file",
        "scoring/project/x.py": b"the scored copy",
        "bad\nname": b"x",
        "": b"x",
    }
    write_records(runs, RUN, files)
    write_records(runs, "../../outside", {"x.txt": b"x"})
    write_records(runs, "not-a-run", {"x.txt": b"x"})
    assert victim.read_text() == "untouched"
    assert sorted(os.listdir(outside)) == ["victim.txt"]
    assert (runs / RUN / "summary.json").read_bytes() == b"{}"
    assert not (runs / RUN / "workspace").exists() and not (runs / RUN / "scoring").exists()
    assert not (tmp_path / "home" / "escaped.txt").exists() and not (runs / "b.txt").exists()
    assert sorted(os.listdir(runs)) == [RUN]


def test_a_run_folder_sends_back_its_records_never_links_fifos_or_the_workspace(tmp_path):
    run = tmp_path / RUN
    (run / "workspace").mkdir(parents=True)
    (run / "workspace" / "app.py").write_text("print()")
    (run / "scoring" / "project").mkdir(parents=True)
    (run / "scoring" / "results.json").write_text("{}")
    (run / "summary.json").write_text("{}")
    secret = tmp_path / "secret"
    secret.write_text("token")
    (run / "events.jsonl").symlink_to(secret)
    os.mkfifo(run / "pipe")
    sent = collect(run)
    assert set(sent) == {"summary.json", "scoring/results.json", "records-left-out.txt"}
    assert b"token" not in b"".join(sent.values())
    assert b"events.jsonl" in sent["records-left-out.txt"]


def test_links_in_the_home_or_a_task_folder_never_travel_to_a_node(tmp_path):
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY")
    (home / "memory.jsonl").write_text('{"id": "l1"}\n')
    (home / "notes" / "deploy.md").write_text("a note")
    (home / "notes" / "key.md").symlink_to(secret)
    (home / "skills").symlink_to(tmp_path, target_is_directory=True)
    (home / "phase_budgets.jsonl").symlink_to(secret)
    sent = snapshot(home)
    assert sent == {"memory.jsonl": b'{"id": "l1"}\n', "notes/deploy.md": b"a note"}
    task = tmp_path / "task"
    (task / "acceptance").mkdir(parents=True)
    (task / "task.toml").write_text('id = "t"')
    (task / "acceptance" / "leak.py").symlink_to(secret)
    assert task_files(task) == {"task.toml": b'id = "t"'}
