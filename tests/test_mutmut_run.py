"""scripts/mutmut-run's order for a mutant's tests: the suite's own collection hooks, then the
tests that killed earlier mutants of the same function moved to the front. The order must be a
permutation of the tests mutmut handed over (a survivor still runs every one) and a test id the
session lacks must send the mutant down mutmut's own path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.scripts import SCRIPTS, load_script

ROOT = SCRIPTS.parent


@pytest.fixture(scope="module")
def runner():
    return load_script("mutmut-run")


def _session(runner, ids, hook_order=lambda items: items.reverse()):
    """A stand-in session: items by id, and a collection hook that reorders in place."""
    items = {i: SimpleNamespace(nodeid=i) for i in ids}

    def modifyitems(session, config, items):
        hook_order(items)

    config = SimpleNamespace(hook=SimpleNamespace(pytest_collection_modifyitems=modifyitems))
    runner._session.clear()
    runner._session.update(items=items, session=SimpleNamespace(config=config))


MUTANT = "lockstep.timing.invariants.kube.x_pdb_allows_eviction__mutmut_7"
IDS = [f"tests/timing/test_rules_kube.py::test_{n}" for n in range(12)]


def test_a_function_of_a_mutant_is_its_name_before_the_mutant_number(runner):
    assert runner._function_of(MUTANT) == "lockstep.timing.invariants.kube.x_pdb_allows_eviction"


@given(tests=st.lists(st.sampled_from(IDS), min_size=1, unique=True),
       killed=st.lists(st.sampled_from(IDS), max_size=6))
def test_the_order_is_the_hooks_with_the_latest_killers_first(runner, tmp_path_factory, tests, killed):
    where = tmp_path_factory.mktemp("killers")
    runner.KILLERS = where
    _session(runner, IDS)
    for test in killed:
        runner._remember_killer(MUTANT, test)
    order = [item.nodeid for item in runner._ordered(MUTANT, tests)]
    assert sorted(order) == sorted(tests)  # a permutation: nothing dropped, nothing added
    latest_first = [t for t in dict.fromkeys(reversed(killed)) if t in tests]
    assert order[:len(latest_first)] == latest_first
    rest = [t for t in reversed(tests) if t not in latest_first]  # the stand-in hook reverses
    assert order[len(latest_first):] == rest


def test_a_killer_of_another_function_does_not_move(runner, tmp_path):
    runner.KILLERS = tmp_path
    _session(runner, IDS, hook_order=lambda items: None)
    runner._remember_killer("lockstep.timing.invariants.kube.x_pdb_needs_replicas__mutmut_1", IDS[5])
    assert [i.nodeid for i in runner._ordered(MUTANT, IDS)] == IDS


def test_a_test_the_session_did_not_collect_sends_the_mutant_the_ordinary_way(runner, tmp_path):
    runner.KILLERS = tmp_path
    _session(runner, IDS)
    assert runner._ordered(MUTANT, [IDS[0], "tests/timing/test_gone.py::test_x"]) is None
    assert runner._ordered(MUTANT, []) is None


def test_the_kill_history_comes_after_this_runs_killers_and_before_the_hooks_order(runner, tmp_path):
    runner.KILLERS = tmp_path
    _session(runner, IDS, hook_order=lambda items: None)
    function = runner._function_of(MUTANT)
    runner._session["history"] = {function: [IDS[7], IDS[3]], "lockstep.timing.other.x_f": [IDS[1]]}
    runner._remember_killer(MUTANT, IDS[9])
    order = [i.nodeid for i in runner._ordered(MUTANT, IDS)]
    assert order[:3] == [IDS[9], IDS[7], IDS[3]]
    assert order[3:] == [t for t in IDS if t not in (IDS[9], IDS[7], IDS[3])]


def test_a_slow_known_killer_comes_after_the_quick_ones_and_before_the_rest(runner, tmp_path, monkeypatch):
    runner.KILLERS = tmp_path
    _session(runner, IDS, hook_order=lambda items: None)
    function = runner._function_of(MUTANT)
    runner._session["history"] = {function: [IDS[7], IDS[3]]}
    durations = {IDS[9]: runner.SLOW_KILLER, IDS[7]: runner.SLOW_KILLER * 10, IDS[3]: runner.SLOW_KILLER / 2,
                 IDS[0]: 0.0, IDS[1]: runner.SLOW_KILLER * 20}  # (IDS[1] is slow but killed nothing)
    monkeypatch.setattr(runner.state(), "duration_by_test", durations)
    for killer in (IDS[9], IDS[5]):
        runner._remember_killer(MUTANT, killer)
    order = [i.nodeid for i in runner._ordered(MUTANT, IDS)]
    # quick killers (this run's latest first, then the history's), then the slow ones in the same
    # order, then the rest in the hooks' order
    assert order[:4] == [IDS[5], IDS[3], IDS[9], IDS[7]]
    assert order[4:] == [i.nodeid for i in runner._hook_order(MUTANT, IDS) if i.nodeid not in order[:4]]


def test_a_killer_found_after_a_mutant_was_ordered_moves_to_the_front(runner, tmp_path):
    runner.KILLERS = tmp_path
    _session(runner, IDS, hook_order=lambda items: None)
    assert [i.nodeid for i in runner._ordered(MUTANT, IDS)] == IDS
    runner._remember_killer(MUTANT, IDS[6])
    assert [i.nodeid for i in runner._ordered(MUTANT.replace("_7", "_9"), IDS)][:2] == [IDS[6], IDS[0]]
    runner._remember_killer(MUTANT, IDS[2])
    assert [i.nodeid for i in runner._ordered(MUTANT.replace("_7", "_10"), IDS)][:3] == [IDS[2], IDS[6], IDS[0]]


def test_the_hooks_run_once_per_function_not_once_per_mutant(runner, tmp_path):
    runner.KILLERS = tmp_path
    calls = []
    _session(runner, IDS, hook_order=lambda items: calls.append(len(items)))
    for n in (1, 2, 3):
        runner._ordered(MUTANT.replace("_7", f"_{n}"), IDS)
    runner._ordered("lockstep.timing.invariants.kube.x_pdb_needs_replicas__mutmut_1", IDS)
    assert calls == [len(IDS), len(IDS)]


@given(history=st.dictionaries(st.from_regex(r"lockstep\.timing\.[a-z]+\.x_[a-z_]+", fullmatch=True),
                               st.lists(st.sampled_from(IDS), unique=True, max_size=5), max_size=6))
def test_the_kill_history_file_reads_back_what_was_written(runner, history):
    assert runner.read_history(runner.write_history(history)) == {f: t for f, t in history.items() if t}


def test_a_runs_history_puts_the_most_kills_first_and_keeps_functions_it_did_not_reach(runner, tmp_path):
    (tmp_path / "lockstep.timing.a.x_f").write_text("\n".join([IDS[2], IDS[5], IDS[5], IDS[1], IDS[2], IDS[5]]) + "\n")
    earlier = {"lockstep.timing.a.x_f": [IDS[0]], "lockstep.timing.b.x_g": [IDS[4]]}
    assert runner.run_history(tmp_path, earlier) == {"lockstep.timing.a.x_f": [IDS[5], IDS[2], IDS[1]],
                                                    "lockstep.timing.b.x_g": [IDS[4]]}


def test_the_stats_runs_modules_are_every_item_once_largest_first(runner):
    items = [SimpleNamespace(nodeid=f"tests/timing/test_{m}.py::t{i}") for m, n in (("a", 2), ("b", 5), ("c", 1))
             for i in range(n)]
    groups = runner._modules(items)
    assert [len(g) for g in groups] == [5, 2, 1]
    assert sorted(i.nodeid for g in groups for i in g) == sorted(i.nodeid for i in items)
    assert all(len({i.nodeid.split("::")[0] for i in g}) == 1 for g in groups)


@given(env=st.none() | st.text(max_size=40), local=st.none() | st.text(max_size=40))
def test_the_mutant_under_test_is_mutmuts_answer_in_every_state(runner, env, local):
    """Set in the environment or not, recorded in the process or not, changed between calls:
    the fast lookup answers what mutmut's own `get_mutant_under_test` does."""
    import os

    import mutmut.mutation.trampoline as trampoline

    saved_env, saved_local = os.environ.get("MUTANT_UNDER_TEST"), trampoline._mutant_under_test
    try:
        trampoline._mutant_under_test = local
        for value in (env, "pkg.mod.x_f__mutmut_1", None, env):
            if value is None:
                os.environ.pop("MUTANT_UNDER_TEST", None)
            elif "\0" not in value:
                os.environ["MUTANT_UNDER_TEST"] = value
            assert runner._mutant_under_test() == _mutmuts_answer()
    finally:
        trampoline._mutant_under_test = saved_local
        if saved_env is None:
            os.environ.pop("MUTANT_UNDER_TEST", None)
        else:
            os.environ["MUTANT_UNDER_TEST"] = saved_env


def _mutmuts_answer() -> str:
    """mutmut's own `get_mutant_under_test` (the script replaces it only in the gate's process)."""
    import mutmut.mutation.trampoline as trampoline

    assert trampoline.get_mutant_under_test.__module__ == "mutmut.mutation.trampoline"
    return trampoline.get_mutant_under_test()


def test_a_failing_tests_report_is_one_line_and_still_a_failure(runner, tmp_path):
    """In the gate's process a failed test's report carries where and what failed, not the
    traceback; the report still says the test failed (all the gate reads)."""
    import _pytest.reports as reports

    (tmp_path / "test_two.py").write_text("def test_breaks():\n    assert 1 == 2\n\n"
                                          "def test_holds():\n    assert 1 == 1\n")
    seen = []

    class Collect:
        def pytest_runtest_logreport(self, report):
            seen.append(report)

    saved = reports._format_failed_longrepr
    reports._format_failed_longrepr = runner._one_line_failure
    try:
        code = pytest.main([str(tmp_path / "test_two.py"), "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                            "--rootdir", str(tmp_path)], plugins=[Collect()])
    finally:
        reports._format_failed_longrepr = saved
    failed = [r for r in seen if r.failed]
    assert [r.nodeid for r in failed] == ["test_two.py::test_breaks"]
    assert str(failed[0].longrepr) == "test_two.py::test_breaks failed in call: AssertionError"
    assert [r.outcome for r in seen if r.when == "call"] == ["failed", "passed"]
    assert code == 1


NAMES = ["", "mutant_generation", "fail", "pkg.here.x_f__mutmut_1", "pkg.here.x_f__mutmut_2",
         "pkg.here.x_f__mutmut_9", "pkg.other.x_f__mutmut_1", "pkg.here.x_g__mutmut_1"]


def _wrapped_both(runner):
    """`f` of a module `pkg.here` with two mutants, wrapped by mutmut's trampoline and the lean one."""
    def x_f__mutmut_orig(a, b=1):
        return ("orig", a, b)

    def x_f__mutmut_1(a, b=1):
        return ("m1", a, b)

    def x_f__mutmut_2(a, b=1):
        raise ValueError(a)

    out = []
    for wrap in (runner._ordinary_wrap_in_trampoline, runner._lean_trampoline):
        mutants = {}

        def f(a, b=1):
            """f's doc."""
        f.__module__ = "pkg.here"
        wrapped = wrap(mutants)(f)
        mutants.update({"_mutmut_orig": x_f__mutmut_orig, "x_f__mutmut_1": x_f__mutmut_1,
                        "x_f__mutmut_2": x_f__mutmut_2})  # filled after the decoration, as generated code does
        out.append(wrapped)
    return out


def _outcome(call):
    try:
        return ("returned", call())
    except Exception as e:  # noqa: BLE001 - the outcome compared, whatever it is
        return ("raised", type(e).__name__, str(e))


@given(names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=8), a=st.integers(), b=st.integers())
def test_the_lean_trampoline_calls_what_mutmuts_calls_for_each_mutant_under_test_in_turn(runner, names, a, b):
    import mutmut.mutation.trampoline as trampoline

    ordinary, lean = _wrapped_both(runner)
    assert lean.__doc__ == ordinary.__doc__ == "f's doc." and lean.__name__ == "f"
    saved = trampoline._mutant_under_test
    try:
        for name in names:
            trampoline.set_mutant_under_test(name)
            assert _outcome(lambda: lean(a, b=b)) == _outcome(lambda: ordinary(a, b=b)), name
    finally:
        trampoline._mutant_under_test = saved
        import os
        os.environ.pop("MUTANT_UNDER_TEST", None)


def test_the_stats_run_through_the_lean_trampoline_records_the_call_as_mutmuts_does(runner):
    import os

    import mutmut.mutation.trampoline as trampoline
    from mutmut.state import state

    ordinary, lean = _wrapped_both(runner)
    saved = trampoline._mutant_under_test
    recorded = []
    try:
        for wrapped in (ordinary, lean):
            trampoline.set_mutant_under_test("pkg.here.x_f__mutmut_1")
            assert wrapped(1) == ("m1", 1, 1)  # a name remembered first: "stats" must still record
            trampoline.set_mutant_under_test("stats")
            state()._stats.clear()
            assert wrapped(2) == ("orig", 2, 1)
            recorded.append(set(state()._stats))
        assert recorded[0] == recorded[1] == {f"{__name__}.x_f"}  # named by the original's module
    finally:
        state()._stats.clear()
        trampoline._mutant_under_test = saved
        os.environ.pop("MUTANT_UNDER_TEST", None)


@pytest.fixture
def forking(runner, tmp_path, monkeypatch):
    """`submit` in a scratch `mutants/` (this run's killers under it, no kill history, no
    timeout thread: the pids given a timeout are recorded), and a stand-in session: `forking(outcomes)`
    (nodeid -> passes) makes items that log each run to `ran.txt` (the forked child's memory is
    its own) and report a failure unless they pass; the mutant compiled in the child is logged
    there too. Returns the recorded timeouts."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mutants").mkdir()
    monkeypatch.setattr(runner, "KILLERS", runner.Path("mutmut-run-killers"))
    monkeypatch.setattr(runner, "_history", lambda: {})
    timeouts = []
    monkeypatch.setattr(runner, "register_timeout", lambda pid, timeout_s: timeouts.append(pid))

    def materialize(mutant_name):  # (the real one is held by the lazy_sample tests below)
        with open(tmp_path / "ran.txt", "a") as log:
            log.write(f"compiled:{mutant_name}\n")

    monkeypatch.setattr(runner, "_materialize", materialize)

    def session(outcomes):
        reports = runner._Reports()

        def item(nodeid, passes):
            def protocol(item, nextitem):
                with open(tmp_path / "ran.txt", "a") as log:
                    log.write(nodeid + "\n")
                if not passes:  # (logged as pytest logs a failed call)
                    reports.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, failed=True, when="call",
                                                                     duration=0.0))

            return SimpleNamespace(nodeid=nodeid, ihook=SimpleNamespace(pytest_runtest_protocol=protocol))

        hook = SimpleNamespace(pytest_collection_modifyitems=lambda session, config, items: None)
        runner._session.clear()
        runner._session.update(items={i: item(i, ok) for i, ok in outcomes.items()}, reports=reports,
                               session=SimpleNamespace(config=SimpleNamespace(hook=hook)))
        return timeouts

    return session


@pytest.mark.parametrize("passes", [True, False])
def test_a_mutants_child_runs_the_tests_the_parent_ordered_and_remembers_its_killer(runner, tmp_path, forking, passes):
    """`submit` orders the mutant's tests before the fork (this run's killers of its function
    first) and the child runs them in that order, stopping at the first failure; the parent
    registers the child and its timeout as mutmut does, and the child's exit code is the result."""
    import os

    ids = IDS[:4]
    timeouts = forking({i: passes or i != IDS[1] for i in ids})
    (tmp_path / "mutants" / "mutmut-run-killers").mkdir()
    (tmp_path / "mutants" / "mutmut-run-killers" / runner._function_of(MUTANT)).write_text(IDS[3] + "\n")
    fork_runner = SimpleNamespace(debug=True, _running={})
    runner.submit(fork_runner, MUTANT, ids, 60, 0.1)
    (pid, worker), = fork_runner._running.items()
    assert worker.mutant_name == MUTANT and timeouts == [pid]
    _, status = os.waitpid(pid, 0)
    compiled, *ran = (tmp_path / "ran.txt").read_text().split()
    assert compiled == f"compiled:{MUTANT}"  # before its first test
    killers = (tmp_path / "mutants" / "mutmut-run-killers" / runner._function_of(MUTANT)).read_text().split()
    if passes:
        assert (os.waitstatus_to_exitcode(status), ran) == (0, [IDS[3], IDS[0], IDS[1], IDS[2]])
        assert killers == [IDS[3]]
    else:  # the earlier killer first, then the collection order up to the failing test
        assert (os.waitstatus_to_exitcode(status), ran) == (1, [IDS[3], IDS[0], IDS[1]])
        assert killers == [IDS[3], IDS[1]]


def test_a_mutants_child_ends_at_the_first_failed_report_before_the_tests_teardown(runner, tmp_path, forking):
    """The verdict is decided at the first failed report: the child ends there, with the
    killer remembered, before anything the protocol would still do (its teardown, the reports
    of a failing Hypothesis test)."""
    import os

    forking({IDS[0]: True})
    reports = runner._session["reports"]

    def protocol(item, nextitem):
        reports.pytest_runtest_logreport(SimpleNamespace(nodeid=IDS[0], failed=True, when="call", duration=0.0))
        with open(tmp_path / "ran.txt", "a") as log:
            log.write("teardown\n")

    runner._session["items"][IDS[0]].ihook.pytest_runtest_protocol = protocol
    fork_runner = SimpleNamespace(debug=True, _running={})
    runner.submit(fork_runner, MUTANT, [IDS[0]], 60, 0.1)
    (pid, _), = fork_runner._running.items()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 1
    assert "teardown" not in (tmp_path / "ran.txt").read_text()
    assert (tmp_path / "mutants" / "mutmut-run-killers" / runner._function_of(MUTANT)).read_text().split() == [IDS[0]]


def test_a_mutant_with_a_test_the_session_lacks_is_submitted_the_ordinary_way(runner, forking, monkeypatch):
    forking({IDS[0]: True})
    handed = []
    monkeypatch.setattr(runner, "_ordinary_submit", lambda *args: handed.append(args[1:3]))
    runner.submit(SimpleNamespace(debug=True, _running={}), MUTANT, [IDS[0], "tests/timing/test_gone.py::test_x"],
                  60, 0.1)
    assert handed == [(MUTANT, [IDS[0], "tests/timing/test_gone.py::test_x"])]


def test_a_mutants_child_whose_test_protocol_raises_is_suspicious_never_a_kill(runner, tmp_path, forking):
    """An error outside a test's own report (a hook that raises) ends the child with mutmut's
    "suspicious" code, which the gate fails on; it neither counts as a kill nor lets the child
    carry on in the parent's loop."""
    import os

    from mutmut.stats import status_by_exit_code

    forking({IDS[0]: True})

    def broken(item, nextitem):
        raise RuntimeError("a hook broke")

    runner._session["items"][IDS[0]].ihook.pytest_runtest_protocol = broken
    fork_runner = SimpleNamespace(debug=False, _running={})
    runner.submit(fork_runner, MUTANT, [IDS[0]], 60, 0.1)
    (pid, _), = fork_runner._running.items()
    _, status = os.waitpid(pid, 0)
    assert status_by_exit_code[os.waitstatus_to_exitcode(status)] == "suspicious"
    assert not (tmp_path / "mutants" / "mutmut-run-killers").exists()


# ---- mutants compiled in the child that tests them ----------------------------------------------
SAMPLE = '''from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

LIMIT = 3


def scaled(x: int, factor: int = 2, *, label: str = "s", tags: Sequence[str] = ()) -> str:
    if x > 10:
        return f"{x * factor}{label}"
    return f"{x + factor}{label}"


def capped(x: int, n: int = LIMIT) -> int:
    return min(x, n + 1)


class Base:
    def size(self) -> int:
        return 1


class Box(Base):
    unit = "ms"

    def __init__(self, value: int) -> None:
        self.value = value
        self.__secret = value * 2

    def render(self, width: int = 4) -> str:
        return str(self.value + 1).rjust(width - 1) + self.unit

    def size(self) -> int:
        return super().size() + self.value * 3

    def hidden(self) -> int:
        return self.__secret - 1
'''
# Compiled alone they would not mean the same: a default that is a name (`capped`), `super()`
# (`Box.size`), a private name the class mangles (`Box.__init__`, `Box.hidden`).
KEPT_WHOLE = ("x_capped__", "xǁBoxǁ__init____", "xǁBoxǁsize__", "xǁBoxǁhidden__")


@pytest.fixture
def lazy_sample(runner, tmp_path, monkeypatch):
    """SAMPLE mutated by mutmut's own generator and written as `lazy_sample.py`, then stripped
    (`strip_mutants`) and imported; the file mutmut wrote imported whole as `lazy_sample_whole`.
    Returns (mutant names, table, stripped module, whole module, generated code)."""
    import importlib
    import importlib.machinery
    import importlib.util
    import sys

    from mutmut.mutation.file_mutation import mutate_file_contents

    mutated = mutate_file_contents("lazy_sample.py", SAMPLE)
    path = tmp_path / "lazy_sample.py"
    path.write_text(mutated.code, encoding="utf-8")
    table = runner.strip_mutants(str(path))
    monkeypatch.setattr(runner, "_lazy", {f"lazy_sample.{name}": where for name, where in table.items()})
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("lazy_sample", None)
    stripped = importlib.import_module("lazy_sample")
    loader = importlib.machinery.SourceFileLoader("lazy_sample_whole", str(path) + runner.FULL)
    whole = importlib.util.module_from_spec(importlib.util.spec_from_loader("lazy_sample_whole", loader))
    loader.exec_module(whole)
    yield list(mutated.mutant_names), table, stripped, whole, mutated.code
    sys.modules.pop("lazy_sample", None)


def _code(co):
    """What a code object runs and reports (all but its file name), its nested code too."""
    return (co.co_code, co.co_names, co.co_varnames, co.co_freevars, co.co_cellvars, co.co_flags, co.co_argcount,
            co.co_posonlyargcount, co.co_kwonlyargcount, co.co_firstlineno, co.co_linetable, co.co_exceptiontable,
            co.co_name, co.co_qualname, tuple(_code(c) if hasattr(c, "co_code") else c for c in co.co_consts))


def _mutant(runner, module, name):
    return getattr(module, runner._dict_name(name)).get(name)


def test_a_mutant_compiled_in_its_child_is_the_function_mutmut_wrote(runner, lazy_sample):
    """Every mutant left out of the module, compiled by `_materialize`, is the function the whole
    generated module defines: the same code (bytecode, constants, names, line numbers, qualified
    name), defaults, module and globals, in its mutants dict and on its module or class; the
    mutants that would not mean the same compiled alone stay in the module."""
    names, table, stripped, whole, _ = lazy_sample
    assert set(table) == {n for n in names if not n.startswith(KEPT_WHOLE)}
    assert {n for n in names if n.startswith(KEPT_WHOLE)} and len(table) >= 15
    for name in names:
        if name not in table:  # kept: registered as generated
            assert _code(_mutant(runner, stripped, name).__code__) == _code(_mutant(runner, whole, name).__code__)
            continue
        assert _mutant(runner, stripped, name) is None
        runner._materialize(f"lazy_sample.{name}")
        lazy, eager = _mutant(runner, stripped, name), _mutant(runner, whole, name)
        assert _code(lazy.__code__) == _code(eager.__code__), name
        assert (lazy.__defaults__, lazy.__kwdefaults__, lazy.__qualname__, lazy.__annotations__) == (
            eager.__defaults__, eager.__kwdefaults__, eager.__qualname__, eager.__annotations__)
        assert lazy.__module__ == "lazy_sample" and lazy.__globals__ is vars(stripped)
        assert lazy.__code__.co_filename == stripped.__file__
        owner = getattr(stripped, name.split("ǁ")[1]) if "ǁ" in name else stripped  # xǁClassǁmethod__mutmut_N
        assert getattr(owner, name) is lazy


@pytest.mark.parametrize("call", [lambda m: m.scaled(12), lambda m: m.scaled(3, label="ms"), lambda m: m.capped(9),
                                  lambda m: m.Box(5).render(), lambda m: m.Box(5).size(), lambda m: m.Box(2).hidden(),
                                  lambda m: m.Base().size()])
def test_each_mutant_under_test_gives_what_the_whole_module_gives(runner, lazy_sample, call):
    import mutmut.mutation.trampoline as trampoline

    names, table, stripped, whole, _ = lazy_sample
    saved = trampoline._mutant_under_test
    try:
        for name in ["", *names]:
            if name in table:
                runner._materialize(f"lazy_sample.{name}")
            trampoline.set_mutant_under_test(f"lazy_sample.{name}" if name else "")
            lazy = _outcome(lambda: call(stripped))
            trampoline.set_mutant_under_test(f"lazy_sample_whole.{name}" if name else "")
            assert lazy == _outcome(lambda: call(whole)), name
    finally:
        trampoline._mutant_under_test = saved
        import os
        os.environ.pop("MUTANT_UNDER_TEST", None)


def test_the_stripped_module_keeps_every_other_line_where_it_was(runner, lazy_sample, tmp_path):
    names, table, _, _, code = lazy_sample
    stripped = (tmp_path / "lazy_sample.py").read_text(encoding="utf-8").split("\n")
    generated = code.split("\n")
    assert len(stripped) == len(generated)
    assert all(s in (g, "") for s, g in zip(stripped, generated))
    assert sum(s != g for s, g in zip(stripped, generated)) > 0
    runner._restore_all()
    assert (tmp_path / "lazy_sample.py").read_text(encoding="utf-8") == code  # put back for `mutmut show`
    assert not (tmp_path / ("lazy_sample.py" + runner.FULL)).exists()


def test_a_mutant_in_neither_the_module_nor_the_table_is_an_error_not_the_original(runner, lazy_sample):
    with pytest.raises(LookupError):
        runner._materialize("lazy_sample.x_scaled__mutmut_999")


def test_a_module_that_evaluates_annotations_when_it_defines_them_is_left_whole(runner, tmp_path):
    from mutmut.mutation.file_mutation import mutate_file_contents

    path = tmp_path / "eager_sample.py"
    eager = SAMPLE.replace("from __future__ import annotations\n", "")
    path.write_text(mutate_file_contents("eager_sample.py", eager).code)
    before = path.read_text()
    assert runner.strip_mutants(str(path)) == {} and path.read_text() == before


# Every place a node's text depends on where it is: a method's indentation, a continuation line
# inside brackets, a statement before a semicolon, an argument before a comma, a `match` whose
# case is removed (an indented block inside an indented block), tabs, a nested function, a
# lambda, a classmethod, a default value.
SPLICE_SAMPLE = '''import re


def joined(parts, sep=", ", *, limit=3):
    total = 0; count = 1
    total += len(parts)
    picked = [p.upper() for p in parts if p and not p.startswith("#")]
    found = re.search(
        r"\\\\d+",
        sep.join(picked),
        flags=re.I,
    )
    return dict(a=1, b=total - count) if found else {"k": limit // 2, "v": None}


def shape(value):
    match value:
        case {"x": x}:
            return x * 2
        case [first, *rest]:
            return first
        case _:
            return -1


class Gauge:
\tscale = 2.5

\tdef __init__(self, start=0):
\t\tself.level = start
\t\tdef bump(n):
\t\t\treturn n + 1
\t\tself.bump = bump

\t@classmethod
\tdef empty(cls):
\t\treturn cls(start=True)

\tdef read(self, unit="ms"):
\t\twhile self.level < 10:
\t\t\tif self.level % 3 == 0:
\t\t\t\tbreak
\t\t\tself.level = self.bump(self.level)
\t\tkey = lambda v: v is not None and v >= self.scale
\t\treturn f"{self.level}{unit}".lstrip("0"), key(self.level)
'''


def _both_ways(runner, monkeypatch, source, filename):
    from mutmut.mutation import file_mutation

    monkeypatch.setattr(file_mutation, "function_trampoline_arrangement", runner._ordinary_arrangement)
    ordinary = file_mutation.mutate_file_contents(filename, source)
    monkeypatch.setattr(file_mutation, "function_trampoline_arrangement", runner._spliced_arrangement)
    return ordinary, file_mutation.mutate_file_contents(filename, source)


@pytest.mark.parametrize("where", ["sample", "lockstep/timing/path.py"])
def test_spliced_mutants_are_the_file_mutmut_writes(runner, monkeypatch, where):
    """The generated file (code, mutant names, each function's lines, hashes) is byte for byte
    the one mutmut's own arrangement writes: on a sample of every context a node's text depends
    on, and on one of the gate's own modules (all 44 were compared when this was written)."""
    from pathlib import Path

    source = SPLICE_SAMPLE if where == "sample" else (Path(__file__).parents[1] / where).read_text(encoding="utf-8")
    ordinary, spliced = _both_ways(runner, monkeypatch, source, "sample.py" if where == "sample" else where)
    assert len(ordinary.mutant_names) > (60 if where == "sample" else 150)
    assert spliced.code == ordinary.code
    assert spliced == ordinary


def test_a_mutant_whose_node_renders_otherwise_alone_is_built_mutmuts_way(runner, monkeypatch):
    """When a mutant's original node does not render back to its own span in the template, the
    mutant is built by mutmut's `deep_replace` and rendered whole: same file, every mutant."""
    rendered = runner._Template.rendered
    monkeypatch.setattr(runner._Template, "rendered", lambda self, node, key: "?" + rendered(self, node, key))
    replaced = []
    deep_replace = runner._ordinary_deep_replace
    monkeypatch.setattr(runner, "_ordinary_deep_replace", lambda *a: replaced.append(a) or deep_replace(*a))
    ordinary, spliced = _both_ways(runner, monkeypatch, SPLICE_SAMPLE, "sample.py")
    assert spliced == ordinary
    names = ordinary.mutant_names
    assert {call[0].name.value for call in replaced} == set(names)  # every mutant (a method's twice)


def test_a_node_that_occurs_twice_is_replaced_where_deep_replace_replaces_it(runner):
    """mutmut's `deep_replace` replaces one occurrence, the first; a tree built by hand can hold
    the same node object twice, and the spliced mutant replaces the same one."""
    import libcst as cst
    from mutmut.mutation.file_mutation import Mutation

    statement = cst.parse_statement("x = 1\n")
    function = cst.parse_statement("def f():\n    pass\n").with_changes(
        body=cst.IndentedBlock(body=[statement, statement]))
    one = statement.body[0].value
    mutation = Mutation(original_node=one, mutated_node=cst.Integer("2"), contained_by_top_level_function=function)
    module = cst.Module(body=[])
    _, nodes, _, names = runner._spliced_arrangement(function, [mutation], None)
    spliced = module.code_for_node(nodes[-1])
    ordinary = runner._ordinary_deep_replace(function.with_changes(name=cst.Name(names[0])), one, cst.Integer("2"))
    assert spliced == module.code_for_node(ordinary) == f"def {names[0]}():\n    x = 2\n    x = 1\n"


# ---- the fork server --------------------------------------------------------------------------------
SERVED_MODULE = """\
def f():
    return 1


def x_f__mutmut_1():
    return 2


def x_f__mutmut_2():
    return 3


mutants_x_f__mutmut = {"x_f__mutmut_1": x_f__mutmut_1, "x_f__mutmut_2": x_f__mutmut_2}
"""
SERVED_TESTS = """\
import os


def test_passes():
    assert True


def test_sees_the_mutant():
    assert os.environ["MUTANT_UNDER_TEST"] != "served.x_f__mutmut_1"
"""
SERVED_IDS = ["tests/test_served.py::test_passes", "tests/test_served.py::test_sees_the_mutant"]


@pytest.fixture
def served(runner, tmp_path, monkeypatch):
    """A scratch `mutants/` with a module whose mutants dict holds two mutants and two tests,
    one failing under the first mutant: the arguments, path and (empty) lazy table the fork
    server is started with, as `_collect` leaves them."""
    (tmp_path / "mutants" / "tests").mkdir(parents=True)
    (tmp_path / "mutants" / "served.py").write_text(SERVED_MODULE)
    (tmp_path / "mutants" / "tests" / "test_served.py").write_text(SERVED_TESTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "_lazy", {})
    monkeypatch.syspath_prepend(str(tmp_path / "mutants"))
    runner._session.clear()
    runner._session.update(items=dict.fromkeys(SERVED_IDS),
                           args=["--rootdir=.", "-q", "-s", "-p", "no:randomly", "-p", "no:cacheprovider", "tests"])
    servers = []

    def start():
        servers.append(runner._Server(debug=False))
        return servers[-1]

    yield start
    for server in servers:
        if server.proc.poll() is None:
            server.stop()
            server.proc.wait()
    runner._session.clear()


def test_the_fork_server_forks_each_mutants_child_and_sends_back_its_exit_code(runner, tmp_path, served):
    """Killed (a test fails: exit 1, its killer remembered), survived (every test passes:
    0) and a mutant its module lacks (mutmut's "suspicious"), each in a child of the server;
    the server ends once told there is no more work."""
    from mutmut.stats import status_by_exit_code

    server = served()
    assert server.wait_ready() is None
    for mutant in ("served.x_f__mutmut_1", "served.x_f__mutmut_2", "served.x_f__mutmut_9"):
        server.submit(mutant, SERVED_IDS, 60, 60.0, 0.1)
    results = {}
    while server.pending:
        result = server.result()
        results[result.mutant_name] = status_by_exit_code[result.exit_code]
    assert results == {"served.x_f__mutmut_1": "killed", "served.x_f__mutmut_2": "survived",
                       "served.x_f__mutmut_9": "suspicious"}
    assert (tmp_path / "mutants" / "mutmut-run-killers" / "served.x_f").read_text().split() == [SERVED_IDS[1]]
    server.close()
    assert server.proc.returncode == 0


@pytest.mark.parametrize("ids", [[*SERVED_IDS, SERVED_IDS[0] + "_gone"], [SERVED_IDS[0], SERVED_IDS[0] + "_gone"]])
def test_a_fork_server_that_collects_other_tests_is_not_used(runner, served, ids):
    """More tests than this process holds, or as many with other ids."""
    runner._session["items"] = dict.fromkeys(ids)
    assert served().wait_ready() == f"the fork server collected other tests (2, this process {len(ids)})"


def test_a_fork_server_that_ends_early_fails_the_run(runner, served):
    server = served()
    assert server.wait_ready() is None
    server.submit("served.x_f__mutmut_2", SERVED_IDS, 60, 60.0, 0.1)
    server.proc.kill()
    server.proc.wait()
    with pytest.raises(RuntimeError, match="the fork server ended"):
        while True:
            server.result()


TRIM_PROBE = """
from tests.scripts import load_script
runner = load_script("mutmut-run")

def anon_kb():
    return int(next(l.split()[1] for l in open("/proc/self/smaps_rollup") if l.startswith("Anonymous")))

# 2,000 chunks of 24 KiB on the C heap (below glibc's mmap threshold), each followed by a small
# one that stays: freeing the large ones leaves free pages inside the heap, not at its top,
# which only malloc_trim hands back.
kept, large = [], []
for _ in range(2000):
    large.append(bytearray(24 * 1024))
    kept.append(bytearray(600))
del large
before = anon_kb()
runner._trim_heap()
print(before, anon_kb())
"""


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs Linux's /proc/self/smaps_rollup")
def test_the_fork_server_hands_free_heap_pages_back_before_forking():
    """What `_serve` calls before its first fork: the C heap's free pages inside the heap are
    unmapped, so no fork copies (and no child's exit tears down) their page-table entries."""
    done = subprocess.run([sys.executable, "-c", TRIM_PROBE], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    before, after = map(int, done.stdout.split())
    assert before - after >= 30 * 1024, (before, after)  # of the ~47 MiB freed


class _ReadLog(list):
    """A collected session's items that logs which places are read."""

    def __init__(self, items):
        super().__init__(items)
        self.read = []

    def __getitem__(self, i):
        self.read.append(i)
        return super().__getitem__(i)


@given(st.lists(st.integers(0, len(IDS) - 1), unique=True))
def test_the_fork_server_gets_a_mutants_tests_by_place_and_its_child_looks_each_up_when_reached(runner, picked):
    _session(runner, IDS)  # (the parent's collected session; the server's holds the same, in order)
    wanted = [IDS[p] for p in picked]
    collected = _ReadLog(runner._session["items"].values())
    items = runner._Picked(collected, runner._places(wanted))
    assert len(items) == len(wanted) and collected.read == []
    assert [item.nodeid for item in items] == wanted
    assert collected.read == picked  # each place once, in the order asked, none other


def test_places_follow_the_session_they_are_asked_of(runner):
    _session(runner, IDS)
    assert memoryview(runner._places([IDS[2], IDS[0]])).cast("I").tolist() == [2, 0]
    runner._session["items"] = dict.fromkeys(reversed(IDS))  # (another session: not the places kept)
    assert memoryview(runner._places([IDS[2], IDS[0]])).cast("I").tolist() == [len(IDS) - 3, len(IDS) - 1]
