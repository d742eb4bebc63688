"""Hidden checks for flask-notes, through Flask's test client (no network)."""

import os
import tempfile
import unittest

from app import create_app


class NotesApiTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.db_path = os.path.join(self.folder.name, "notes.db")
        self.client = create_app(self.db_path).test_client()

    def tearDown(self):
        self.folder.cleanup()

    def _create(self, title, body="..."):
        response = self.client.post("/notes", json={"title": title, "body": body})
        self.assertEqual(response.status_code, 201, response.get_data(as_text=True))
        return response.get_json()

    def test_create_and_get(self):
        note = self._create("Groceries", "milk, eggs")
        self.assertIsInstance(note["id"], int)
        self.assertEqual((note["title"], note["body"]), ("Groceries", "milk, eggs"))
        response = self.client.get(f"/notes/{note['id']}")
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.get_json(), note)

    def test_body_defaults_to_empty(self):
        response = self.client.post("/notes", json={"title": "Only a title"})
        self.assertEqual(response.status_code, 201)
        self.assertEqual(response.get_json()["body"], "")

    def test_invalid_payloads_are_400(self):
        for payload in [{"body": "no title"}, {"title": ""}, {"title": 42}, ["a", "list"]]:
            with self.subTest(payload=payload):
                response = self.client.post("/notes", json=payload)
                self.assertEqual(response.status_code, 400)
                self.assertIn("error", response.get_json())
        self.assertEqual(self.client.get("/notes").get_json(), [])

    def test_list_is_ordered_and_searchable(self):
        first = self._create("Shopping list", "apples")
        second = self._create("Work", "call the BANK")
        third = self._create("Banking", "pay rent")
        listed = self.client.get("/notes").get_json()
        self.assertEqual([n["id"] for n in listed], [first["id"], second["id"], third["id"]])
        found = self.client.get("/notes?q=bank").get_json()
        self.assertEqual([n["id"] for n in found], [second["id"], third["id"]])
        self.assertEqual(self.client.get("/notes?q=zebra").get_json(), [])

    def test_patch_updates_given_fields(self):
        note = self._create("Draft", "v1")
        response = self.client.patch(f"/notes/{note['id']}", json={"body": "v2"})
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.get_json(), {"id": note["id"], "title": "Draft", "body": "v2"})
        bad = self.client.patch(f"/notes/{note['id']}", json={"title": ""})
        self.assertEqual(bad.status_code, 400)
        self.assertEqual(self.client.get(f"/notes/{note['id']}").get_json()["title"], "Draft")

    def test_delete_and_unknown_ids(self):
        note = self._create("Temporary")
        response = self.client.delete(f"/notes/{note['id']}")
        self.assertEqual(response.status_code, 204)
        self.assertEqual(response.get_data(), b"")
        for method in (self.client.get, self.client.delete):
            missing = method(f"/notes/{note['id']}")
            self.assertEqual(missing.status_code, 404)
            self.assertIn("error", missing.get_json())
        self.assertEqual(self.client.patch("/notes/999", json={"body": "x"}).status_code, 404)

    def test_notes_persist_in_the_database_file(self):
        note = self._create("Persistent", "still here")
        again = create_app(self.db_path).test_client()
        self.assertEqual(again.get(f"/notes/{note['id']}").get_json(), note)
        self.assertTrue(os.path.exists(self.db_path))
