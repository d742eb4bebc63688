"""Hidden checks for rate-limiter: token bucket and sliding window on a fake clock."""

import math

from ratelimit import RateLimitExceeded, SlidingWindow, TokenBucket


class FakeClock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


def _close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _raises(exc_type, function, *args):
    try:
        function(*args)
    except exc_type as exc:
        return exc
    raise AssertionError(f"{function.__name__}{args!r} should raise {exc_type.__name__}")


def test_token_bucket_starts_full_then_denies():
    clock = FakeClock()
    bucket = TokenBucket(rate=1.0, capacity=3, clock=clock)
    assert _close(bucket.tokens("alice"), 3.0)
    assert [bucket.allow("alice") for _ in range(4)] == [True, True, True, False]
    assert _close(bucket.tokens("alice"), 0.0)


def test_token_bucket_refills_at_rate_up_to_capacity():
    clock = FakeClock()
    bucket = TokenBucket(rate=2.0, capacity=4, clock=clock)
    for _ in range(4):
        assert bucket.allow("k")
    assert not bucket.allow("k")
    clock.now += 0.25
    assert _close(bucket.tokens("k"), 0.5)
    assert not bucket.allow("k")
    clock.now += 0.25
    assert bucket.allow("k")
    assert not bucket.allow("k")
    clock.now += 100.0
    assert _close(bucket.tokens("k"), 4.0)
    assert [bucket.allow("k") for _ in range(5)] == [True] * 4 + [False]


def test_token_bucket_cost_and_denial_consumes_nothing():
    clock = FakeClock()
    bucket = TokenBucket(rate=1.0, capacity=5, clock=clock)
    assert bucket.allow("k", cost=3)
    assert _close(bucket.tokens("k"), 2.0)
    assert not bucket.allow("k", cost=3)
    assert _close(bucket.tokens("k"), 2.0)
    assert bucket.allow("k", cost=1.5)
    assert _close(bucket.tokens("k"), 0.5)
    clock.now += 2.5
    assert bucket.allow("k", 3)
    assert _close(bucket.tokens("k"), 0.0)


def test_token_bucket_retry_after_and_check():
    clock = FakeClock()
    bucket = TokenBucket(rate=4.0, capacity=2, clock=clock)
    assert bucket.retry_after("k") == 0.0
    bucket.check("k")
    bucket.check("k")
    assert _close(bucket.retry_after("k"), 0.25)
    assert _close(bucket.retry_after("k", 2), 0.5)
    exc = _raises(RateLimitExceeded, bucket.check, "k")
    assert isinstance(exc, Exception)
    assert _close(exc.retry_after, 0.25)
    clock.now += 0.125
    assert _close(bucket.retry_after("k"), 0.125)
    clock.now += 0.125
    assert bucket.retry_after("k") == 0.0
    assert bucket.check("k") is None
    assert not bucket.allow("k")


def test_invalid_arguments_raise_value_error():
    clock = FakeClock()
    for rate, capacity in ((0, 1), (-1, 1), (1, 0), (1, -2)):
        _raises(ValueError, TokenBucket, rate, capacity, clock)
    bucket = TokenBucket(1.0, 2.0, clock)
    _raises(ValueError, bucket.allow, "k", 0)
    _raises(ValueError, bucket.allow, "k", -1)
    _raises(ValueError, bucket.allow, "k", 2.5)
    assert _close(bucket.tokens("k"), 2.0)
    for limit, window in ((0, 1.0), (-3, 1.0), (1, 0), (1, -1.0)):
        _raises(ValueError, SlidingWindow, limit, window, clock)


def test_keys_are_independent():
    clock = FakeClock()
    bucket = TokenBucket(1.0, 1, clock)
    window = SlidingWindow(2, 10.0, clock)
    assert bucket.allow("alice") and not bucket.allow("alice")
    assert bucket.allow("bob")
    assert bucket.allow(("tuple", 1))
    assert window.allow("alice") and window.allow("alice") and not window.allow("alice")
    assert window.remaining("bob") == 2
    assert window.allow("bob")
    assert window.remaining("bob") == 1
    assert window.remaining("alice") == 0


def test_sliding_window_counts_events_inside_the_window():
    clock = FakeClock(0.0)
    window = SlidingWindow(limit=3, window=10.0, clock=clock)
    assert window.remaining("k") == 3
    assert window.allow("k")
    clock.now = 4.0
    assert window.allow("k")
    clock.now = 6.0
    assert window.allow("k")
    clock.now = 9.5
    assert not window.allow("k")
    assert window.remaining("k") == 0
    clock.now = 10.0  # the event at 0.0 no longer counts: now - t < window fails
    assert window.remaining("k") == 1
    assert window.allow("k")
    assert not window.allow("k")
    clock.now = 14.0
    assert window.allow("k")


def test_sliding_window_denied_events_are_not_recorded():
    clock = FakeClock(0.0)
    window = SlidingWindow(limit=1, window=5.0, clock=clock)
    assert window.allow("k")
    for step in range(1, 5):
        clock.now = float(step)
        assert not window.allow("k")
    clock.now = 5.0
    assert window.allow("k")


def test_sliding_window_retry_after_and_check():
    clock = FakeClock(100.0)
    window = SlidingWindow(limit=2, window=8.0, clock=clock)
    assert window.retry_after("k") == 0.0
    window.check("k")
    clock.now = 102.0
    assert window.check("k") is None
    clock.now = 103.0
    assert _close(window.retry_after("k"), 5.0)
    exc = _raises(RateLimitExceeded, window.check, "k")
    assert _close(exc.retry_after, 5.0)
    clock.now = 108.0
    assert window.retry_after("k") == 0.0
    window.check("k")
    assert _close(window.retry_after("k"), 2.0)


def test_reset_forgets_a_key():
    clock = FakeClock()
    bucket = TokenBucket(1.0, 2, clock)
    window = SlidingWindow(1, 60.0, clock)
    bucket.allow("k", 2)
    window.allow("k")
    bucket.allow("other", 2)
    bucket.reset("k")
    window.reset("k")
    assert _close(bucket.tokens("k"), 2.0)
    assert _close(bucket.tokens("other"), 0.0)
    assert window.remaining("k") == 1
    assert window.allow("k")


def test_default_clock_works_without_sleeping():
    bucket = TokenBucket(rate=0.001, capacity=2)
    assert bucket.allow("k") and bucket.allow("k")
    assert not bucket.allow("k")
    window = SlidingWindow(limit=1, window=3600.0)
    assert window.allow("k") and not window.allow("k")
    assert window.retry_after("k") > 3000.0
