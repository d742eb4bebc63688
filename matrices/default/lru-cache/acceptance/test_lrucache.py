"""Hidden checks for lru-cache: recency, eviction, expiry with a fake clock, stats, memoize."""

from lrucache import LRUCache, memoize


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_capacity_must_be_positive():
    for capacity in (0, -3):
        try:
            LRUCache(capacity)
        except ValueError:
            continue
        raise AssertionError(f"capacity {capacity} must raise ValueError")


def test_get_put_and_default():
    cache = LRUCache(2)
    cache.put("a", 1)
    assert cache.get("a") == 1
    assert cache.get("missing") is None
    assert cache.get("missing", "fallback") == "fallback"
    cache.put("a", 2)
    assert cache.get("a") == 2 and len(cache) == 1


def test_least_recently_used_is_evicted():
    cache = LRUCache(3)
    for key in "abc":
        cache.put(key, key.upper())
    assert cache.get("a") == "A"  # a becomes most recent: b is now the oldest
    cache.put("d", "D")
    assert "b" not in cache
    assert cache.keys() == ["c", "a", "d"]
    cache.put("c", "C2")  # replacing refreshes recency
    cache.put("e", "E")
    assert cache.keys() == ["d", "c", "e"]
    assert cache.stats()["evictions"] == 2


def test_contains_changes_neither_recency_nor_stats():
    cache = LRUCache(2)
    cache.put("x", 1)
    cache.put("y", 2)
    assert "x" in cache and "nope" not in cache
    cache.put("z", 3)
    assert cache.keys() == ["y", "z"]
    assert cache.stats() == {"hits": 0, "misses": 0, "evictions": 1}


def test_expiry_with_fake_clock():
    clock = FakeClock()
    cache = LRUCache(10, ttl=5, clock=clock)
    cache.put("k", "v")
    clock.now += 4.5
    assert cache.get("k") == "v"
    clock.now += 0.5
    assert "k" not in cache and len(cache) == 0
    assert cache.get("k", "gone") == "gone"
    cache.put("k", "again")
    clock.now += 3
    cache.put("k", "refreshed")
    clock.now += 3
    assert cache.get("k") == "refreshed"


def test_expired_entries_make_room_without_counting_evictions():
    clock = FakeClock()
    cache = LRUCache(2, ttl=10, clock=clock)
    cache.put("old", 1)
    clock.now += 6
    cache.put("new", 2)
    clock.now += 5  # "old" has expired, "new" has not
    cache.put("newer", 3)
    assert cache.keys() == ["new", "newer"]
    assert cache.stats()["evictions"] == 0


def test_delete_and_stats():
    cache = LRUCache(2)
    cache.put("a", 1)
    assert cache.delete("a") is True
    assert cache.delete("a") is False
    cache.put("b", 2)
    cache.get("b")
    cache.get("b")
    cache.get("a")
    assert cache.stats() == {"hits": 2, "misses": 1, "evictions": 0}


def test_memoize():
    calls = []

    @memoize(2)
    def area(width, height=1, *, unit="m"):
        """Area of a rectangle."""
        calls.append((width, height, unit))
        return f"{width * height}{unit}"

    assert area(2, 3) == "6m"
    assert area(2, 3) == "6m"
    assert area(2, height=3, unit="cm") == "6cm"
    assert area(2, unit="cm", height=3) == "6cm"
    assert len(calls) == 2
    area(5)  # a third key evicts the least recently used, area(2, 3)
    area(2, 3)
    assert len(calls) == 4
    assert area.__name__ == "area" and area.__doc__ == "Area of a rectangle."
    assert isinstance(area.cache, LRUCache)
    assert area.cache.stats()["hits"] == 2
