"""Hidden checks for bank-ledger: Decimal cents, overdrafts, the journal, dated balances and
statements."""

from datetime import date
from decimal import Decimal

from ledger import InsufficientFunds, Ledger, LedgerError, UnknownAccount

D = Decimal


def _cents(value, text):
    return isinstance(value, Decimal) and str(value) == text


def _raises(error_type, function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except error_type as error:
        return error
    raise AssertionError(f"{function.__name__}{args!r} must raise {error_type.__name__}")


def _ledger():
    ledger = Ledger()
    ledger.open_account("alice", "Alice Smith")
    ledger.open_account("bob", "Bob Jones", overdraft_limit="50")
    return ledger


def test_open_accounts_and_errors():
    ledger = _ledger()
    assert _cents(ledger.balance("alice"), "0.00")
    assert issubclass(UnknownAccount, LedgerError) and issubclass(InsufficientFunds, LedgerError)
    assert issubclass(LedgerError, Exception)
    _raises(LedgerError, ledger.open_account, "alice", "Someone Else")
    _raises(ValueError, ledger.open_account, "carol", "Carol", overdraft_limit=-1)
    for call in (
        lambda: ledger.balance("nobody"),
        lambda: ledger.deposit("nobody", 5, date(2024, 1, 1)),
        lambda: ledger.withdraw("nobody", 5, date(2024, 1, 1)),
        lambda: ledger.transfer("bob", "nobody", 5, date(2024, 1, 1)),
        lambda: ledger.transfer("nobody", "alice", 5, date(2024, 1, 1)),
        lambda: ledger.statement("nobody", date(2024, 1, 1), date(2024, 1, 2)),
    ):
        _raises(UnknownAccount, call)
    assert ledger.journal() == []


def test_amounts_are_rounded_half_up_to_cents():
    ledger = _ledger()
    entry = ledger.deposit("alice", "2.675", date(2024, 1, 1))
    assert _cents(entry.amount, "2.68")
    assert _cents(ledger.deposit("alice", D("0.125"), date(2024, 1, 1)).amount, "0.13")
    assert _cents(ledger.deposit("alice", 7, date(2024, 1, 1)).amount, "7.00")
    assert _cents(ledger.deposit("alice", "0.005", date(2024, 1, 1)).amount, "0.01")
    assert _cents(ledger.balance("alice"), "9.82")
    for _ in range(10):
        ledger.deposit("bob", "0.10", date(2024, 1, 2))
    assert _cents(ledger.balance("bob"), "1.00")


def test_bad_amounts_change_nothing():
    ledger = _ledger()
    _raises(TypeError, ledger.deposit, "alice", 10.5, date(2024, 1, 1))
    _raises(TypeError, ledger.open_account, "carol", "Carol", overdraft_limit=1.5)
    for amount in (0, "-5", "0.004", D("-0.01")):
        _raises(ValueError, ledger.deposit, "alice", amount, date(2024, 1, 1))
    _raises(ValueError, ledger.transfer, "bob", "bob", 1, date(2024, 1, 1))
    assert ledger.journal() == [] and _cents(ledger.balance("bob"), "0.00")


def test_overdraft_limits():
    ledger = _ledger()
    day = date(2024, 2, 1)
    ledger.deposit("alice", "20.00", day)
    _raises(InsufficientFunds, ledger.withdraw, "alice", "20.01", day)
    ledger.withdraw("alice", "20", day)
    assert _cents(ledger.balance("alice"), "0.00")
    ledger.withdraw("bob", "49.99", day)
    _raises(InsufficientFunds, ledger.withdraw, "bob", "0.02", day)
    ledger.withdraw("bob", "0.01", day)
    assert _cents(ledger.balance("bob"), "-50.00")
    assert len(ledger.journal()) == 4


def test_transfers_move_money_or_nothing():
    ledger = _ledger()
    day = date(2024, 3, 10)
    ledger.deposit("alice", 100, day)
    entry = ledger.transfer("alice", "bob", "30.333", day, memo="rent")
    assert (entry.kind, entry.src, entry.dst, entry.memo) == ("transfer", "alice", "bob", "rent")
    assert _cents(entry.amount, "30.33")
    assert _cents(ledger.balance("alice"), "69.67") and _cents(ledger.balance("bob"), "30.33")
    _raises(InsufficientFunds, ledger.transfer, "alice", "bob", "69.68", day)
    ledger.transfer("bob", "alice", "80.33", day)
    assert _cents(ledger.balance("bob"), "-50.00") and _cents(ledger.balance("alice"), "150.00")
    _raises(InsufficientFunds, ledger.transfer, "bob", "alice", "0.01", day)
    assert len(ledger.journal()) == 3


def test_the_journal_is_append_only():
    ledger = _ledger()
    first = ledger.deposit("alice", 10, date(2024, 1, 5), memo="cash")
    second = ledger.withdraw("alice", 3, date(2024, 1, 6))
    journal = ledger.journal()
    assert journal == [first, second]
    assert [e.seq for e in journal] == [1, 2]
    assert (first.when, first.kind, first.src, first.dst, first.memo) == (
        date(2024, 1, 5),
        "deposit",
        None,
        "alice",
        "cash",
    )
    assert (second.kind, second.src, second.dst, second.memo) == ("withdrawal", "alice", None, "")
    journal.clear()
    assert len(ledger.journal()) == 2
    try:
        first.amount = D("1000.00")
    except AttributeError:
        pass
    else:
        raise AssertionError("entries must be immutable")
    assert _cents(ledger.balance("alice"), "7.00")


def test_dates_may_not_go_back():
    ledger = _ledger()
    ledger.deposit("alice", 10, date(2024, 5, 2))
    ledger.deposit("bob", 10, date(2024, 5, 2))
    _raises(ValueError, ledger.withdraw, "alice", 1, date(2024, 5, 1))
    _raises(ValueError, ledger.transfer, "alice", "bob", 1, date(2024, 4, 30))
    assert len(ledger.journal()) == 2
    assert ledger.deposit("alice", 1, date(2024, 5, 3)).seq == 3


def test_balance_at_a_date():
    ledger = _ledger()
    ledger.deposit("alice", 100, date(2024, 1, 1))
    ledger.transfer("alice", "bob", 40, date(2024, 1, 15))
    ledger.withdraw("alice", "10.50", date(2024, 1, 15))
    ledger.deposit("alice", 5, date(2024, 2, 1))
    assert _cents(ledger.balance("alice", date(2023, 12, 31)), "0.00")
    assert _cents(ledger.balance("alice", date(2024, 1, 1)), "100.00")
    assert _cents(ledger.balance("alice", date(2024, 1, 14)), "100.00")
    assert _cents(ledger.balance("alice", date(2024, 1, 15)), "49.50")
    assert _cents(ledger.balance("alice", date(2024, 12, 31)), "54.50")
    assert _cents(ledger.balance("bob", date(2024, 1, 31)), "40.00")
    assert _cents(ledger.balance("alice"), "54.50")


def test_statement_format():
    ledger = _ledger()
    ledger.deposit("alice", "1300", date(2024, 3, 1), memo="salary")
    ledger.transfer("alice", "bob", "1250.5", date(2024, 3, 2), memo="car")
    ledger.transfer("bob", "alice", 20, date(2024, 3, 3))
    ledger.withdraw("bob", "0.75", date(2024, 3, 4), memo="fee")
    assert ledger.statement("bob", date(2024, 3, 1), date(2024, 3, 31)) == (
        "Statement for bob (Bob Jones)\n"
        "Period: 2024-03-01 to 2024-03-31\n"
        "Opening balance: 0.00\n"
        "2024-03-02 | transfer from alice: car | +1250.50 | 1250.50\n"
        "2024-03-03 | transfer to alice | -20.00 | 1230.50\n"
        "2024-03-04 | withdrawal: fee | -0.75 | 1229.75\n"
        "Closing balance: 1229.75\n"
    )


def test_statement_period_and_negative_balances():
    ledger = _ledger()
    ledger.deposit("bob", 10, date(2024, 1, 20))
    ledger.withdraw("bob", 25, date(2024, 1, 31))
    ledger.deposit("alice", 99, date(2024, 2, 1))
    ledger.deposit("bob", "4.5", date(2024, 2, 10))
    ledger.withdraw("bob", 30, date(2024, 2, 29))
    ledger.deposit("bob", 100, date(2024, 3, 1))
    assert ledger.statement("bob", date(2024, 2, 1), date(2024, 2, 29)) == (
        "Statement for bob (Bob Jones)\n"
        "Period: 2024-02-01 to 2024-02-29\n"
        "Opening balance: -15.00\n"
        "2024-02-10 | deposit | +4.50 | -10.50\n"
        "2024-02-29 | withdrawal | -30.00 | -40.50\n"
        "Closing balance: -40.50\n"
    )
    assert ledger.statement("alice", date(2024, 3, 1), date(2024, 3, 1)) == (
        "Statement for alice (Alice Smith)\n"
        "Period: 2024-03-01 to 2024-03-01\n"
        "Opening balance: 99.00\n"
        "Closing balance: 99.00\n"
    )
    _raises(ValueError, ledger.statement, "bob", date(2024, 3, 2), date(2024, 3, 1))
