"""A notes service: a JSON API over Flask and SQLite.

Run it with ``python app.py`` (it serves on http://127.0.0.1:5000 and keeps its notes in
``notes.db``), or make an app of your own with ``create_app(db_path)``.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

from flask import Flask, jsonify, request

SCHEMA = """
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT ''
)
"""


def create_app(db_path: str) -> Flask:
    """The notes app, keeping its notes in the SQLite file ``db_path`` (made if needed)."""
    app = Flask(__name__)

    def connect() -> sqlite3.Connection:
        db = sqlite3.connect(db_path)
        db.row_factory = sqlite3.Row
        return db

    with closing(connect()) as db, db:
        db.executescript(SCHEMA)

    def error(status: int, message: str):
        return jsonify({"error": message}), status

    def as_note(row: sqlite3.Row) -> dict:
        return {"id": row["id"], "title": row["title"], "body": row["body"]}

    def find(db: sqlite3.Connection, note_id: int) -> sqlite3.Row | None:
        return db.execute("SELECT * FROM notes WHERE id = ?", (note_id,)).fetchone()

    @app.post("/notes")
    def create_note():
        data = request.get_json(silent=True)
        if not isinstance(data, dict):
            return error(400, "the body must be a JSON object")
        title, body = data.get("title"), data.get("body", "")
        if not isinstance(title, str) or not title.strip():
            return error(400, "title must be a non-empty string")
        if not isinstance(body, str):
            return error(400, "body must be a string")
        with closing(connect()) as db, db:
            cursor = db.execute("INSERT INTO notes (title, body) VALUES (?, ?)", (title, body))
            row = find(db, cursor.lastrowid)
        return jsonify(as_note(row)), 201

    @app.get("/notes")
    def list_notes():
        with closing(connect()) as db:
            rows = db.execute("SELECT * FROM notes ORDER BY id").fetchall()
        return jsonify([as_note(row) for row in rows])

    @app.get("/notes/<int:note_id>")
    def get_note(note_id: int):
        with closing(connect()) as db:
            row = find(db, note_id)
        if row is None:
            return error(404, f"no note {note_id}")
        return jsonify(as_note(row))

    @app.delete("/notes/<int:note_id>")
    def delete_note(note_id: int):
        with closing(connect()) as db, db:
            deleted = db.execute("DELETE FROM notes WHERE id = ?", (note_id,)).rowcount
        if not deleted:
            return error(404, f"no note {note_id}")
        return "", 204

    return app


if __name__ == "__main__":
    create_app("notes.db").run()
