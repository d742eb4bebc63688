"""Hidden checks for notes-tags, through Flask's test client (no network)."""

import os
import sqlite3
import tempfile
import unittest

from app import create_app

OLD_SCHEMA = (
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, "
    "body TEXT NOT NULL DEFAULT '')"
)
BAD_TAGS = ["work", [1], [""], ["ok", "  "], [None], {"a": 1}]


class TagsTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.db_path = os.path.join(self.folder.name, "notes.db")
        self.client = create_app(self.db_path).test_client()

    def tearDown(self):
        self.folder.cleanup()

    def _create(self, **note):
        response = self.client.post("/notes", json=note)
        self.assertEqual(response.status_code, 201, response.get_data(as_text=True))
        return response.get_json()

    def _ids(self, url):
        response = self.client.get(url)
        self.assertEqual(response.status_code, 200)
        return [note["id"] for note in response.get_json()]

    def test_tags_are_normalised_and_returned_everywhere(self):
        note = self._create(title="Plan", body="q3", tags=["Work", " urgent ", "work"])
        self.assertEqual(note["tags"], ["urgent", "work"])
        self.assertEqual(self.client.get(f"/notes/{note['id']}").get_json(), note)
        self.assertEqual(self.client.get("/notes").get_json(), [note])

    def test_tags_default_to_an_empty_list(self):
        note = self._create(title="Untagged")
        self.assertEqual(note["tags"], [])
        self.assertEqual(self.client.get(f"/notes/{note['id']}").get_json()["tags"], [])

    def test_invalid_tags_are_400_and_create_nothing(self):
        for tags in BAD_TAGS:
            with self.subTest(tags=tags):
                response = self.client.post("/notes", json={"title": "t", "tags": tags})
                self.assertEqual(response.status_code, 400)
                self.assertIn("error", response.get_json())
        self.assertEqual(self.client.get("/notes").get_json(), [])

    def test_list_filtered_by_tag(self):
        first = self._create(title="a", tags=["home"])
        self._create(title="b", tags=["work"])
        third = self._create(title="c", tags=["Work", "home"])
        self.assertEqual(self._ids("/notes?tag=home"), [first["id"], third["id"]])
        self.assertEqual(self._ids("/notes?tag=HOME"), [first["id"], third["id"]])
        self.assertEqual(self._ids("/notes?tag=garden"), [])
        self.assertEqual(len(self._ids("/notes")), 3)

    def test_put_replaces_the_tags(self):
        note = self._create(title="Trip", tags=["travel", "todo"])
        response = self.client.put(f"/notes/{note['id']}/tags", json={"tags": ["Done", "travel"]})
        self.assertEqual(response.status_code, 200, response.get_data(as_text=True))
        updated = response.get_json()
        self.assertEqual(updated, {**note, "tags": ["done", "travel"]})
        self.assertEqual(self.client.get(f"/notes/{note['id']}").get_json(), updated)
        self.assertEqual(self._ids("/notes?tag=todo"), [])
        cleared = self.client.put(f"/notes/{note['id']}/tags", json={"tags": []})
        self.assertEqual(cleared.get_json()["tags"], [])

    def test_put_errors(self):
        note = self._create(title="Trip", tags=["travel"])
        for payload in [{"tags": "travel"}, {}, ["travel"], {"tags": [""]}]:
            with self.subTest(payload=payload):
                response = self.client.put(f"/notes/{note['id']}/tags", json=payload)
                self.assertEqual(response.status_code, 400)
                self.assertIn("error", response.get_json())
        self.assertEqual(self.client.get(f"/notes/{note['id']}").get_json()["tags"], ["travel"])
        missing = self.client.put("/notes/999/tags", json={"tags": ["x"]})
        self.assertEqual(missing.status_code, 404)
        self.assertIn("error", missing.get_json())

    def test_a_deleted_notes_tags_go_with_it(self):
        self._create(title="keep")
        gone = self._create(title="gone", tags=["secret"])
        self.assertEqual(self.client.delete(f"/notes/{gone['id']}").status_code, 204)
        fresh = self._create(title="fresh")
        self.assertEqual(fresh["tags"], [])
        self.assertEqual(self._ids("/notes?tag=secret"), [])

    def test_tags_are_kept_in_the_database_file(self):
        note = self._create(title="Persistent", tags=["keep"])
        self.assertEqual(note["tags"], ["keep"])
        again = create_app(self.db_path).test_client()
        self.assertEqual(again.get(f"/notes/{note['id']}").get_json(), note)


class OldDatabaseTest(unittest.TestCase):
    def test_a_database_of_the_previous_version_keeps_working(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "old.db")
            db = sqlite3.connect(path)
            with db:
                db.execute(OLD_SCHEMA)
                db.execute("INSERT INTO notes (title, body) VALUES ('Old', 'from before')")
            db.close()
            client = create_app(path).test_client()
            old = {"id": 1, "title": "Old", "body": "from before", "tags": []}
            self.assertEqual(client.get("/notes/1").get_json(), old)
            response = client.put("/notes/1/tags", json={"tags": ["legacy"]})
            self.assertEqual(response.status_code, 200, response.get_data(as_text=True))
            self.assertEqual(
                client.get("/notes?tag=legacy").get_json(), [{**old, "tags": ["legacy"]}]
            )
            new = client.post("/notes", json={"title": "New", "tags": ["fresh"]})
            self.assertEqual(new.status_code, 201, new.get_data(as_text=True))
            self.assertEqual(new.get_json()["id"], 2)
