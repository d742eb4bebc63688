"""Hidden checks for sqlite-bookmarks: storing, searching, tags, deleting and persistence."""

import json
import os
import sqlite3
import tempfile
import unittest

from bookmarks import Bookmarks, DuplicateURLError


class BookmarkTests(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.folder.name, "marks.db")
        self.store = Bookmarks(self.path)
        self.ids = [
            self.store.add("https://docs.python.org/3/", "Python Docs", ["Python", " docs ", ""]),
            self.store.add("https://sqlite.org", "SQLite Home", ["db", "sql", "DB"]),
            self.store.add("https://example.com/100%_done", "Progress: 100% done", ["misc"]),
            self.store.add("https://peps.python.org", "PEP index", ["python"]),
        ]

    def tearDown(self):
        self.store.close()
        self.folder.cleanup()

    def test_add_returns_ids_and_get_normalizes_tags(self):
        self.assertEqual(self.ids, [1, 2, 3, 4])
        self.assertEqual(
            self.store.get(1),
            {
                "id": 1,
                "url": "https://docs.python.org/3/",
                "title": "Python Docs",
                "tags": ["docs", "python"],
            },
        )
        self.assertEqual(self.store.get(2)["tags"], ["db", "sql"])
        self.assertEqual(self.store.get(5), None)
        self.assertEqual(self.store.add("https://x.org", "No tags"), 5)
        self.assertEqual(self.store.get(5)["tags"], [])

    def test_duplicate_url_raises_and_stores_nothing(self):
        self.assertTrue(issubclass(DuplicateURLError, ValueError))
        with self.assertRaises(DuplicateURLError):
            self.store.add("https://sqlite.org", "Another title", ["new-tag"])
        self.assertEqual(len(self.store.export()), 4)
        self.assertNotIn("new-tag", self.store.tags())
        self.assertEqual(self.store.get(2)["title"], "SQLite Home")

    def test_search_matches_title_or_url_ignoring_case(self):
        self.assertEqual([b["id"] for b in self.store.search("PYTHON")], [1, 4])
        self.assertEqual([b["id"] for b in self.store.search("home")], [2])
        self.assertEqual([b["id"] for b in self.store.search("sqlite.org")], [2])
        self.assertEqual([b["id"] for b in self.store.search("peps")], [4])
        self.assertEqual(self.store.search("nothing-like-this"), [])

    def test_search_is_a_literal_substring(self):
        self.assertEqual([b["id"] for b in self.store.search("100%")], [3])
        self.assertEqual([b["id"] for b in self.store.search("%_d")], [3])
        self.assertEqual(self.store.search("p_p"), [])
        self.assertEqual(self.store.search("docs%"), [])
        self.assertEqual(self.store.search("s_l"), [])

    def test_by_tag_and_tag_counts(self):
        self.assertEqual([b["id"] for b in self.store.by_tag("python")], [1, 4])
        self.assertEqual([b["id"] for b in self.store.by_tag("  PYTHON ")], [1, 4])
        self.assertEqual(self.store.by_tag("nope"), [])
        tags = self.store.tags()
        self.assertEqual(tags, {"db": 1, "docs": 1, "misc": 1, "python": 2, "sql": 1})
        self.assertEqual(list(tags), ["db", "docs", "misc", "python", "sql"])

    def test_rename_tag_merges_and_counts(self):
        self.assertEqual(self.store.rename_tag("docs", "Python"), 1)
        self.assertEqual(self.store.get(1)["tags"], ["python"])
        self.assertEqual(self.store.rename_tag(" PYTHON", "lang"), 2)
        self.assertEqual([b["id"] for b in self.store.by_tag("lang")], [1, 4])
        self.assertEqual(self.store.by_tag("python"), [])
        self.assertEqual(self.store.rename_tag("absent", "other"), 0)
        self.assertEqual(self.store.tags(), {"db": 1, "lang": 2, "misc": 1, "sql": 1})
        with self.assertRaises(ValueError):
            self.store.rename_tag("db", "   ")

    def test_delete_removes_bookmark_and_its_tags(self):
        self.assertTrue(self.store.delete(2))
        self.assertFalse(self.store.delete(2))
        self.assertFalse(self.store.delete(99))
        self.assertIsNone(self.store.get(2))
        self.assertEqual(self.store.by_tag("db"), [])
        self.assertNotIn("sql", self.store.tags())
        self.assertEqual([b["id"] for b in self.store.export()], [1, 3, 4])
        self.store.add("https://sqlite.org", "Back again")
        self.assertEqual(len(self.store.search("back again")), 1)

    def test_export_lists_plain_dicts_in_id_order(self):
        exported = self.store.export()
        self.assertEqual([b["id"] for b in exported], [1, 2, 3, 4])
        for bookmark in exported:
            self.assertEqual(set(bookmark), {"id", "url", "title", "tags"})
        self.assertEqual(exported[2]["url"], "https://example.com/100%_done")
        self.assertEqual(json.loads(json.dumps(exported)), exported)
        self.assertEqual(exported[1], self.store.get(2))


def test_data_persists_in_a_sqlite_file():
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "persist.db")
        with Bookmarks(path) as store:
            first = store.add("https://a.example", "Alpha", ["x", "y"])
            store.add("https://b.example", "Beta", ["y"])
            store.rename_tag("y", "z")
            store.delete(first)
        with open(path, "rb") as handle:
            assert handle.read(16) == b"SQLite format 3\x00"
        reopened = Bookmarks(path)
        try:
            assert reopened.export() == [
                {"id": 2, "url": "https://b.example", "title": "Beta", "tags": ["z"]}
            ]
            try:
                reopened.add("https://b.example", "Again")
            except DuplicateURLError:
                pass
            else:
                raise AssertionError("a URL stored by an earlier Bookmarks is a duplicate")
        finally:
            reopened.close()
        connection = sqlite3.connect(path)
        try:
            tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            assert tables.fetchall()
        finally:
            connection.close()


def test_memory_database_works():
    store = Bookmarks(":memory:")
    try:
        assert store.add("https://m.example", "Memory", ["t"]) == 1
        assert store.by_tag("t")[0]["title"] == "Memory"
    finally:
        store.close()
