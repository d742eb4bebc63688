"""Which command runs a project's tests and what they need installed, read from real-shaped
configuration: the shapes of python-slugify, humanize, tomlkit, more-itertools and Django."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.loop.source import version_of
from phases.base import Plan
from phases.deps import project_files
from phases.suite import discover_test_command, needed_by_tests
from tests.support import write_files

SLUGIFY = {
    "pyproject.toml": """[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "python-slugify"
version = "9.2.0"
dependencies = ["text-unidecode>=1.3"]

[project.optional-dependencies]
unidecode = ["Unidecode>=1.1.1"]

[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "--color=yes"
""",
    "tox.ini": """[tox]
env_list = py{3.10, 3.11}-{unidecode, anyascii}

[testenv]
deps =
    coverage[toml]>=7
    pytest>=8
    unidecode: Unidecode>=1.1.1
    -r dev.requirements.txt
    {[base]deps}
commands = coverage run -m pytest
""",
    "dev.requirements.txt": "twine\n",
    "slugify/__init__.py": "",
    "tests/test_slugify.py": "def test_x():\n    pass\n",
}
HUMANIZE = {
    "pyproject.toml": """[build-system]
build-backend = "hatchling.build"
requires = ["hatch-vcs", "hatchling>=1.27"]

[project]
name = "humanize"
dynamic = ["version"]
optional-dependencies.tests = ["freezegun", "pytest>=9", "pytest-benchmark"]

[tool.pytest]
addopts = [ "--doctest-modules", "--cov=humanize" ]
testpaths = [ "src", "tests" ]
""",
    "src/humanize/__init__.py": "",
    "tests/test_number.py": "import pytest\n",
}
TOMLKIT = {
    "pyproject.toml": """[project]
name = "tomlkit"
version = "0.15.3"

[dependency-groups]
lint = ["ruff"]
test = [{include-group = "lint"}, "pytest~=7.2", "PyYAML~=6.0", {include-group = "test"}]
dev = ["Sphinx>=4.3.2,<5.0.0"]

[build-system]
requires = ["poetry-core>=2.2.0"]
build-backend = "poetry.core.masonry.api"
""",
    "tomlkit/__init__.py": "",
    "tests/__init__.py": "",
    "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef example():\n    return 1\n",
    "tests/test_api.py": "def test_api(example):\n    assert example\n",
}
MORE_ITERTOOLS = {
    "pyproject.toml": '[project]\nname = "more-itertools"\nversion = "11"\n',
    "Makefile": ".PHONY: test\ntest:\n\tpython -m unittest -v ${tests}\n\ncheck:\n\truff check .\n",
    "requirements/testing.txt": "coverage[toml]\n",
    "more_itertools/__init__.py": "",
    "tests/__init__.py": "",
    "tests/test_more.py": "from unittest import TestCase\n\n\nclass T(TestCase):\n"
    "    def test_x(self):\n        pass\n",
}
DJANGO = {
    "pyproject.toml": '[project]\nname = "Django"\ndependencies = ["asgiref>=3.8.1"]\n',
    "package.json": '{"name": "Django", "scripts": {"test": "grunt test --verbose"}}\n',
    "tests/runtests.py": "print('Django runner')\n",
    "tests/requirements/py3.txt": "asgiref >= 3.8.1\npylibmc; sys_platform != 'win32'\n",
    "tests/requirements/postgres.txt": "psycopg[binary]>=3.1.8\n",
    "tox.ini": "[testenv]\ndeps =\n    -e .\n    py{3,310,311}: -rtests/requirements/py3.txt\n"
    "    postgres: -rtests/requirements/postgres.txt\n",
    "tests/basic/tests.py": "from django.test import TestCase\n",
    "django/__init__.py": "",
}


def test_each_project_is_run_by_its_own_runner(tmp_path):
    assert discover_test_command(write_files(tmp_path / "s", SLUGIFY)) == "python -m pytest -q"
    assert discover_test_command(write_files(tmp_path / "h", HUMANIZE)) == "python -m pytest -q"
    # pytest configured only in tests/conftest.py (it was run by unittest: 0 tests)
    assert discover_test_command(write_files(tmp_path / "t", TOMLKIT)) == "python -m pytest -q"
    assert discover_test_command(write_files(tmp_path / "m", MORE_ITERTOOLS)) == "make test"
    # Django's own runner, not `npm test` of its JavaScript tooling
    assert discover_test_command(write_files(tmp_path / "d", DJANGO)) == "python tests/runtests.py"


def test_what_the_tests_need_is_read_from_every_place_a_project_says_it(tmp_path):
    slugify = needed_by_tests(write_files(tmp_path / "s", SLUGIFY), "python -m pytest -q")
    assert slugify.runner == ["pytest"]
    assert {"coverage[toml]>=7", "pytest>=8", "twine"} <= set(slugify.declared)
    assert "Unidecode>=1.1.1" not in slugify.declared  # a variant's (factor unidecode)
    assert not any(r.startswith(("-", "{")) for r in slugify.declared)
    assert "tox.ini [testenv] deps" in slugify.sources
    humanize = needed_by_tests(write_files(tmp_path / "h", HUMANIZE), "python -m pytest -q")
    assert humanize.runner == ["pytest", "pytest-cov"]  # --cov is pytest-cov's option
    assert humanize.declared == ["freezegun", "pytest>=9", "pytest-benchmark"]
    tomlkit = needed_by_tests(write_files(tmp_path / "t", TOMLKIT), "python -m pytest -q")
    assert tomlkit.declared == ["ruff", "pytest~=7.2", "PyYAML~=6.0"]  # a cycle is cut
    assert "Sphinx>=4.3.2,<5.0.0" not in tomlkit.declared  # dev only when no test group
    django = needed_by_tests(write_files(tmp_path / "d", DJANGO), "python tests/runtests.py")
    assert django.runner == [] and "pylibmc; sys_platform != 'win32'" in django.declared
    assert not any("psycopg" in r for r in django.declared)  # the postgres variant's


def test_a_self_referencing_extra_and_plugins_from_the_configuration(tmp_path):
    root = write_files(
        tmp_path / "p",
        {
            "pyproject.toml": """[project]
name = "Shapes"
[project.optional-dependencies]
test = ["shapes[fast, extra]", "hypothesis"]
fast = ["numpy"]
extra = ["shapes[fast]", "rich"]
""",
            "pytest.ini": "[pytest]\naddopts = -n auto --timeout=30\nasyncio_mode = auto\n"
            "required_plugins = pytest-env>=1 pytest-mock\n",
            "noxfile.py": "import nox\n\n\n@nox.session\ndef tests(session):\n"
            "    session.install('-e', '.', 'attrs')\n"
            "    session.install('-r', 'req.txt', 'toml')\n",
        },
    )
    needs = needed_by_tests(root, None)
    assert needs.runner == [
        "pytest",
        "pytest-xdist",
        "pytest-timeout",
        "pytest-asyncio",
        "pytest-env>=1",
        "pytest-mock",
    ]
    assert needs.declared == ["numpy", "rich", "hypothesis", "attrs", "toml"]


def test_a_node_project_needs_nothing_more(tmp_path):
    root = write_files(tmp_path / "n", {"package.json": '{"scripts": {"test": "node --test"}}\n'})
    assert discover_test_command(root) == "npm test"
    assert needed_by_tests(root, "npm test").all() == []


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@e", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.mark.parametrize(
    ("tag", "after", "version"),
    [
        ("v1.2.0", 0, "1.2.0"),
        ("v1.2.0", 2, "1.2.1.dev2+g{hash}"),
        ("release-3.0rc1", 0, "3.0rc1"),
        ("2.1", 1, "2.2.dev1+g{hash}"),
        ("nightly", 0, None),
    ],
)
def test_the_version_comes_from_the_nearest_tag_as_setuptools_scm_reads_it(
    tmp_path, tag, after, version
):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    git(repo, "tag", tag)
    for n in range(after):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"next {n}")
    head = git(repo, "rev-parse", "HEAD")
    expected = version.format(hash=head[:7]) if version else None
    assert version_of(repo, head) == expected


def test_an_existing_python_projects_package_json_is_its_tooling(tmp_path):
    root = write_files(tmp_path / "d", DJANGO)
    plan = Plan(
        summary="s",
        stack=["python"],
        files=["x.py"],
        dependencies=[],
        test_command="t",
        run_command="true",
    )
    assert project_files(root, plan) == ["pyproject.toml"]
    js = plan.model_copy(update={"stack": ["python", "javascript"]})
    assert project_files(root, js) == ["pyproject.toml", "package.json"]


def test_a_requirements_file_behind_a_linked_folder_is_never_read_on_the_host(tmp_path):
    """A model that makes ``requirements/`` (or a folder a ``-r`` line names) a link to a
    host folder would have the host read a file there: a token on its own line reads as a
    requirement, and the install that has the network would ask the index for it."""
    secrets = write_files(tmp_path / "host", {"test.txt": "ghp_secret_token\n"})
    root = write_files(
        tmp_path / "p",
        {
            "pyproject.toml": '[project]\nname = "p"\n',
            "requirements-dev.txt": "-r vault/test.txt\nrich\n",
        },
    )
    (root / "requirements").symlink_to(secrets)
    (root / "vault").symlink_to(secrets)
    needs = needed_by_tests(root, "python -m pytest -q")
    assert needs.declared == ["rich"]
    assert not any("secret" in r for r in needs.all())
