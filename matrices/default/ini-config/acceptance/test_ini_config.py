"""Hidden checks for ini-config: parsing, typed getters, interpolation and dumping."""

import os
import tempfile

import ini_config

SAMPLE = """\
# global comment
; another comment

[server]
host = example.org
port = 8080
debug = Yes
ratio = 0.25
url = http://example.org:80/a=b # not a comment
empty =

[Paths]
  root   =   /srv/app
names = alpha, beta ,, gamma ,
"""


def _raises(exc_type, function, *args):
    try:
        function(*args)
    except exc_type as exc:
        return exc
    raise AssertionError(f"{function.__name__}{args!r} should raise {exc_type.__name__}")


def test_sections_and_keys_in_file_order():
    config = ini_config.loads(SAMPLE)
    assert config.sections() == ["server", "Paths"]
    assert config.keys("server") == ["host", "port", "debug", "ratio", "url", "empty"]
    assert config.keys("Paths") == ["root", "names"]
    assert config.has("server", "port") and not config.has("server", "Port")
    assert not config.has("paths", "root") and not config.has("nope", "x")
    _raises(KeyError, config.keys, "nope")


def test_values_split_at_first_equals_and_stripped():
    config = ini_config.loads(SAMPLE)
    assert config.get("server", "host") == "example.org"
    assert config.get("server", "url") == "http://example.org:80/a=b # not a comment"
    assert config.get("server", "empty") == ""
    assert config.get("Paths", "root") == "/srv/app"


def test_typed_getters():
    config = ini_config.loads(SAMPLE)
    assert config.get_int("server", "port") == 8080
    assert isinstance(config.get_int("server", "port"), int)
    assert config.get_float("server", "ratio") == 0.25
    assert config.get_bool("server", "debug") is True
    assert config.get_list("Paths", "names") == ["alpha", "beta", "gamma"]
    assert config.get_list("server", "empty") == []
    flags = ini_config.loads(
        "[f]\na = TRUE\nb = on\nc = 1\nd = False\ne = no\nf = OFF\ng = 0\nh = yes\n"
    )
    assert [flags.get_bool("f", k) for k in "abcdefgh"] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
        True,
    ]


def test_bad_typed_values_raise_value_error_even_with_default():
    config = ini_config.loads("[s]\nport = eighty\nratio = 1.5x\nflag = maybe\n")
    _raises(ValueError, config.get_int, "s", "port")
    _raises(ValueError, config.get_int, "s", "port", 1)
    _raises(ValueError, config.get_float, "s", "ratio")
    _raises(ValueError, config.get_bool, "s", "flag")
    _raises(ValueError, config.get_bool, "s", "flag", False)


def test_defaults_for_missing_sections_and_keys():
    config = ini_config.loads(SAMPLE)
    assert config.get("server", "missing", "fallback") == "fallback"
    assert config.get("nosection", "host", None) is None
    assert config.get_int("server", "timeout", 30) == 30
    assert config.get_float("nosection", "x", 1.5) == 1.5
    assert config.get_bool("server", "verbose", False) is False
    assert config.get_list("server", "hosts", ["a"]) == ["a"]
    assert config.get_int("server", "port", 1) == 8080
    _raises(KeyError, config.get, "server", "missing")
    _raises(KeyError, config.get_int, "nosection", "port")
    _raises(KeyError, config.get_list, "server", "hosts")


def test_interpolation_across_sections_recursively():
    text = (
        "[base]\nhost = db.local\nport = 5432\nscheme = postgres\n"
        "[db]\nurl = ${base:scheme}://${base:host}:${db:port}/app\nport = ${base:port}\n"
        "price = $5 and ${nope} and ${ stay\n"
        "[app]\ndsn = ${db:url}?x=1\n"
    )
    config = ini_config.loads(text)
    assert config.get("db", "url") == "postgres://db.local:5432/app"
    assert config.get("app", "dsn") == "postgres://db.local:5432/app?x=1"
    assert config.get_int("db", "port") == 5432
    assert config.get("db", "price") == "$5 and ${nope} and ${ stay"
    assert config.as_dict() == {
        "base": {"host": "db.local", "port": "5432", "scheme": "postgres"},
        "db": {
            "url": "postgres://db.local:5432/app",
            "port": "5432",
            "price": "$5 and ${nope} and ${ stay",
        },
        "app": {"dsn": "postgres://db.local:5432/app?x=1"},
    }


def test_interpolation_cycles_and_missing_references_raise_value_error():
    config = ini_config.loads(
        "[a]\nx = ${b:y}\nself = <${a:self}>\nok = 1\nbad = ${a:missing}\nnosec = ${zz:x}\n"
        "[b]\ny = ${c:z}\n[c]\nz = ${a:x}\n"
    )
    for key in ("x", "self", "bad", "nosec"):
        exc = _raises(Exception, config.get, "a", key)
        assert isinstance(exc, ValueError), f"a:{key} raised {type(exc).__name__}, not ValueError"
    assert config.get("a", "ok") == "1"


def test_parse_errors_are_value_errors_with_line_numbers():
    cases = [
        ("key = 1\n[s]\n", 1),
        ("[s]\na = 1\nthis is not valid\n", 3),
        ("# c\n[s]\n\n= value\n", 4),
        ("[s]\n[ ]\n", 2),
        ("[s]\na = 1\n[t]\n[s]\n", 4),
        ("[s]\na = 1\nb = 2\na = 3\n", 4),
    ]
    for text, lineno in cases:
        exc = _raises(ini_config.ParseError, ini_config.loads, text)
        assert isinstance(exc, ValueError)
        assert exc.lineno == lineno, (text, exc.lineno)


def test_dumps_format_and_round_trip():
    config = ini_config.loads(SAMPLE)
    text = ini_config.dumps(config)
    assert text.endswith("\n")
    # the line of an empty value may keep the space after "=" or not
    assert [line.rstrip() for line in text.split("\n")] == [
        "[server]",
        "host = example.org",
        "port = 8080",
        "debug = Yes",
        "ratio = 0.25",
        "url = http://example.org:80/a=b # not a comment",
        "empty =",
        "",
        "[Paths]",
        "root = /srv/app",
        "names = alpha, beta ,, gamma ,",
        "",
    ]
    again = ini_config.loads(text)
    assert again.sections() == config.sections()
    for section in config.sections():
        assert again.keys(section) == config.keys(section)
    assert again.as_dict() == config.as_dict()
    assert ini_config.dumps(ini_config.loads("# only a comment\n")) == ""
    raw = ini_config.loads("[a]\nx = 1\n[b]\ny = ${a:x}\n")
    assert ini_config.dumps(raw) == "[a]\nx = 1\n\n[b]\ny = ${a:x}\n"


def test_set_and_load_from_file():
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "app.ini")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("[main]\nname = caf\u00e9\nlevel = 1\n")
        config = ini_config.load(path)
    assert config.get("main", "name") == "caf\u00e9"
    config.set("main", "level", "2")
    config.set("main", "extra", "${main:level}0")
    config.set("new", "k", "v")
    assert config.sections() == ["main", "new"]
    assert config.keys("main") == ["name", "level", "extra"]
    assert config.get_int("main", "extra") == 20
    assert ini_config.dumps(config) == (
        "[main]\nname = caf\u00e9\nlevel = 2\nextra = ${main:level}0\n\n[new]\nk = v\n"
    )
