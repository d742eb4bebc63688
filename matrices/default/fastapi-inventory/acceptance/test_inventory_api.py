"""Hidden checks for fastapi-inventory, through FastAPI's TestClient (no network)."""

import os
import tempfile
import unittest

from fastapi.testclient import TestClient
from inventory_api import create_app


class InventoryApiTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.db_path = os.path.join(self.folder.name, "inventory.db")
        self.client = TestClient(create_app(self.db_path))

    def tearDown(self):
        self.client.close()
        self.folder.cleanup()

    def _create(self, name, quantity=1, price=1.0):
        payload = {"name": name, "quantity": quantity, "price": price}
        response = self.client.post("/items", json=payload)
        self.assertEqual(response.status_code, 201, response.text)
        return response.json()

    def test_create_and_get(self):
        item = self._create("widget", 5, 2.5)
        self.assertIsInstance(item["id"], int)
        self.assertEqual((item["name"], item["quantity"], item["price"]), ("widget", 5, 2.5))
        response = self.client.get(f"/items/{item['id']}")
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.json(), item)

    def test_validation_errors_are_422(self):
        bad = [
            {"quantity": 1, "price": 1.0},
            {"name": "x", "quantity": "many", "price": 1.0},
            {"name": "", "quantity": 1, "price": 1.0},
            {"name": "x", "quantity": -1, "price": 1.0},
            {"name": "x", "quantity": 1, "price": -0.5},
        ]
        for payload in bad:
            with self.subTest(payload=payload):
                self.assertEqual(self.client.post("/items", json=payload).status_code, 422)
        self.assertEqual(self.client.get("/items").json(), [])

    def test_duplicate_name_is_409(self):
        self._create("gadget")
        response = self.client.post("/items", json={"name": "gadget", "quantity": 2, "price": 3})
        self.assertEqual(response.status_code, 409)
        self.assertIn("detail", response.json())
        self.assertEqual(len(self.client.get("/items").json()), 1)

    def test_list_ordered_by_id(self):
        ids = [self._create(name)["id"] for name in ("b", "a", "c")]
        listed = self.client.get("/items").json()
        self.assertEqual([item["id"] for item in listed], ids)
        self.assertEqual([item["name"] for item in listed], ["b", "a", "c"])

    def test_adjust_quantity(self):
        item = self._create("bolt", 10, 0.1)
        response = self.client.post(f"/items/{item['id']}/adjust", json={"delta": -4})
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.json()["quantity"], 6)
        too_many = self.client.post(f"/items/{item['id']}/adjust", json={"delta": -7})
        self.assertEqual(too_many.status_code, 400)
        self.assertEqual(self.client.get(f"/items/{item['id']}").json()["quantity"], 6)
        missing = self.client.post("/items/999/adjust", json={"delta": 1})
        self.assertEqual(missing.status_code, 404)

    def test_delete_and_unknown_ids(self):
        item = self._create("temp")
        response = self.client.delete(f"/items/{item['id']}")
        self.assertEqual(response.status_code, 204)
        self.assertEqual(response.content, b"")
        self.assertEqual(self.client.get(f"/items/{item['id']}").status_code, 404)
        self.assertIn("detail", self.client.get(f"/items/{item['id']}").json())
        self.assertEqual(self.client.delete(f"/items/{item['id']}").status_code, 404)

    def test_inventory_value(self):
        self.assertEqual(self.client.get("/inventory/value").json(), {"total_value": 0.0})
        self._create("a", 3, 1.1)
        self._create("b", 2, 0.255)
        value = self.client.get("/inventory/value").json()["total_value"]
        self.assertAlmostEqual(value, 3.81, places=2)

    def test_items_persist_in_the_database_file(self):
        item = self._create("durable", 7, 9.99)
        with TestClient(create_app(self.db_path)) as again:
            self.assertEqual(again.get(f"/items/{item['id']}").json(), item)
