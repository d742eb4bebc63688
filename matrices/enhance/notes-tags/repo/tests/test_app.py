import os
import tempfile
import unittest

from app import create_app


class NotesTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.db_path = os.path.join(self.folder.name, "notes.db")
        self.client = create_app(self.db_path).test_client()

    def tearDown(self):
        self.folder.cleanup()

    def create(self, **note):
        response = self.client.post("/notes", json=note)
        self.assertEqual(response.status_code, 201, response.get_data(as_text=True))
        return response.get_json()

    def test_create_and_get(self):
        note = self.create(title="Groceries", body="milk")
        self.assertEqual(note, {"id": 1, "title": "Groceries", "body": "milk"})
        self.assertEqual(self.client.get("/notes/1").get_json(), note)

    def test_body_is_optional(self):
        self.assertEqual(self.create(title="Call Sam")["body"], "")

    def test_bad_bodies(self):
        for payload in [
            {"body": "no title"},
            {"title": "  "},
            {"title": 3},
            ["a"],
            {"title": "t", "body": 5},
        ]:
            with self.subTest(payload=payload):
                response = self.client.post("/notes", json=payload)
                self.assertEqual(response.status_code, 400)
                self.assertIn("error", response.get_json())
        self.assertEqual(self.client.get("/notes").get_json(), [])

    def test_list_in_id_order(self):
        first, second = self.create(title="a"), self.create(title="b")
        self.assertEqual(self.client.get("/notes").get_json(), [first, second])

    def test_delete(self):
        note = self.create(title="gone soon")
        self.assertEqual(self.client.delete(f"/notes/{note['id']}").status_code, 204)
        self.assertEqual(self.client.get(f"/notes/{note['id']}").status_code, 404)
        self.assertEqual(self.client.delete(f"/notes/{note['id']}").status_code, 404)

    def test_notes_are_kept_in_the_file(self):
        note = self.create(title="kept")
        again = create_app(self.db_path).test_client()
        self.assertEqual(again.get(f"/notes/{note['id']}").get_json(), note)


if __name__ == "__main__":
    unittest.main()
