"""Hidden checks for recurring-events: daily, weekly, monthly rules, limits and exceptions."""

from datetime import date, datetime, time

from recurrence import RecurringEvent


def dt(*parts):
    return datetime(*parts)


def days(occurrences):
    return [t.date().isoformat() for t in occurrences]


def test_daily_keeps_the_time_and_the_window_is_half_open():
    event = RecurringEvent("daily", dt(2024, 3, 1, 9, 30))
    got = event.occurrences(dt(2024, 3, 1), dt(2024, 3, 4, 9, 30))
    assert got == [dt(2024, 3, 1, 9, 30), dt(2024, 3, 2, 9, 30), dt(2024, 3, 3, 9, 30)]
    assert all(isinstance(t, datetime) and t.time() == time(9, 30) for t in got)
    assert event.occurrences(dt(2024, 2, 1), dt(2024, 3, 1, 9, 30)) == []
    assert event.occurrences(dt(2024, 3, 5), dt(2024, 3, 5)) == []
    assert event.occurrences(dt(2024, 3, 9), dt(2024, 3, 5)) == []


def test_daily_interval_counts_from_the_start_day():
    start = dt(2023, 12, 30, 8, 0)
    event = RecurringEvent("daily", start, interval=3)
    got = event.occurrences(dt(2024, 1, 1), dt(2024, 1, 12))
    assert days(got) == ["2024-01-02", "2024-01-05", "2024-01-08", "2024-01-11"]
    far = event.occurrences(dt(2073, 1, 1), dt(2073, 1, 7))
    assert len(far) == 2 and all((t - start).days % 3 == 0 for t in far)


def test_weekly_on_given_weekdays_from_the_start():
    start = dt(2024, 5, 15, 18, 0)  # a Wednesday
    event = RecurringEvent("weekly", start, weekdays=[4, 0, 2])
    got = event.occurrences(dt(2024, 5, 1), dt(2024, 5, 28))
    assert days(got) == [
        "2024-05-15",
        "2024-05-17",
        "2024-05-20",
        "2024-05-22",
        "2024-05-24",
        "2024-05-27",
    ]
    assert got[0] == start and got[-1] == dt(2024, 5, 27, 18, 0)
    default = RecurringEvent("weekly", start)
    assert days(default.occurrences(dt(2024, 5, 1), dt(2024, 6, 1))) == [
        "2024-05-15",
        "2024-05-22",
        "2024-05-29",
    ]


def test_weekly_interval_counts_monday_to_sunday_weeks():
    start = dt(2024, 1, 3, 7, 15)  # Wednesday of the week of Monday 2024-01-01
    event = RecurringEvent("weekly", start, interval=2, weekdays=[0, 6])
    got = event.occurrences(dt(2024, 1, 1), dt(2024, 2, 1))
    assert days(got) == ["2024-01-07", "2024-01-15", "2024-01-21", "2024-01-29"]


def test_monthly_skips_months_without_the_day():
    event = RecurringEvent("monthly", dt(2024, 1, 31, 12, 0))
    got = event.occurrences(dt(2024, 1, 1), dt(2025, 1, 1))
    assert days(got) == [
        "2024-01-31",
        "2024-03-31",
        "2024-05-31",
        "2024-07-31",
        "2024-08-31",
        "2024-10-31",
        "2024-12-31",
    ]
    leap = RecurringEvent("monthly", dt(2023, 1, 29, 6, 0))
    febs = [t for t in leap.occurrences(dt(2023, 1, 1), dt(2025, 1, 1)) if t.month == 2]
    assert days(febs) == ["2024-02-29"]


def test_monthly_interval_crosses_years_and_still_counts_skipped_months():
    event = RecurringEvent("monthly", dt(2024, 10, 30, 20, 0), interval=2)
    got = event.occurrences(dt(2024, 1, 1), dt(2025, 9, 1))
    assert days(got) == ["2024-10-30", "2024-12-30", "2025-04-30", "2025-06-30", "2025-08-30"]


def test_until_is_inclusive():
    event = RecurringEvent("daily", dt(2024, 6, 1, 10, 0), until=dt(2024, 6, 4, 10, 0))
    assert days(event.occurrences(dt(2024, 1, 1), dt(2025, 1, 1))) == [
        "2024-06-01",
        "2024-06-02",
        "2024-06-03",
        "2024-06-04",
    ]
    early = RecurringEvent("daily", dt(2024, 6, 1, 10, 0), until=dt(2024, 6, 4, 9, 59))
    assert len(early.occurrences(dt(2024, 1, 1), dt(2025, 1, 1))) == 3
    assert early.next_after(dt(2024, 6, 3, 10, 0)) is None


def test_count_includes_excluded_occurrences():
    event = RecurringEvent(
        "weekly",
        dt(2024, 2, 5, 9, 0),
        weekdays=[0, 3],
        count=5,
        exceptions=[date(2024, 2, 8)],
    )
    got = event.occurrences(dt(2024, 1, 1), dt(2025, 1, 1))
    assert days(got) == ["2024-02-05", "2024-02-12", "2024-02-15", "2024-02-19"]
    assert event.next_after(dt(2024, 2, 19, 9, 0)) is None


def test_exceptions_and_add_exception():
    event = RecurringEvent("daily", dt(2024, 4, 1, 8, 0), exceptions={date(2024, 4, 2)})
    assert event.add_exception(date(2024, 4, 4)) is None
    got = event.occurrences(dt(2024, 4, 1), dt(2024, 4, 6))
    assert days(got) == ["2024-04-01", "2024-04-03", "2024-04-05"]
    assert event.next_after(dt(2024, 4, 3, 8, 0)) == dt(2024, 4, 5, 8, 0)


def test_next_after():
    event = RecurringEvent("monthly", dt(2024, 1, 31, 23, 0))
    assert event.next_after(dt(2020, 1, 1)) == dt(2024, 1, 31, 23, 0)
    assert event.next_after(dt(2024, 1, 31, 23, 0)) == dt(2024, 3, 31, 23, 0)
    assert event.next_after(dt(2024, 4, 1)) == dt(2024, 5, 31, 23, 0)
    assert event.next_after(dt(2099, 4, 1)) == dt(2099, 5, 31, 23, 0)


def test_invalid_rules_raise_value_error():
    start = dt(2024, 1, 1, 9, 0)
    bad = [
        ("yearly", {}),
        ("daily", {"interval": 0}),
        ("daily", {"count": 0}),
        ("daily", {"count": 3, "until": dt(2024, 2, 1)}),
        ("daily", {"weekdays": [1]}),
        ("monthly", {"weekdays": [1]}),
        ("weekly", {"weekdays": []}),
        ("weekly", {"weekdays": [1, 7]}),
        ("weekly", {"weekdays": [-1]}),
    ]
    for freq, options in bad:
        try:
            RecurringEvent(freq, start, **options)
        except ValueError:
            continue
        raise AssertionError(f"RecurringEvent({freq!r}, **{options!r}) must raise ValueError")
