"""An existing project's own test suite: the first judge of a change to it.

* :mod:`~phases.suite.command`: which command runs the tests, and what the tests need
  installed besides the project (the runner, its plugins, the test extras);
* :mod:`~phases.suite.inventory`: which tests the test files hold, read statically;
* :mod:`~phases.suite.run`: cadillac's own run of the command, in the sandbox, with the
  runners' reports (:mod:`~phases.suite.hook` for unittest);
* :mod:`~phases.suite.results`: what the reports say, test by test, and the judgement of
  a run against the first one;
* :mod:`~phases.suite.gate`: the build and validate checks' tests.
"""

from phases.suite.command import SuiteNeeds, discover_test_command, needed_by_tests
from phases.suite.inventory import SuiteInventory, inventory

__all__ = ["SuiteInventory", "SuiteNeeds", "discover_test_command", "inventory", "needed_by_tests"]
