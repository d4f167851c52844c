"""The mutation gate's test order (tests/mutant_order.py): a permutation, never a selection."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from tests.mutant_order import durations, mutated, order

MUTANT = "lockstep.timing.invariants.lb.x_drain_fits_grace__mutmut_7"


@dataclass(frozen=True)
class It:
    nodeid: str

    @property
    def name(self) -> str:
        return self.nodeid.split("::")[-1]


def ids(items: list[It]) -> list[str]:
    return [i.nodeid for i in items]


def test_a_mutants_name_gives_its_module_and_the_words_of_its_function():
    assert mutated(MUTANT) == ("lb", frozenset({"drain", "fits", "grace"}))
    assert mutated("lockstep.timing.model.xǁStackǁ_names__mutmut_2") == ("model", frozenset({"stack", "names"}))


def test_clean_stats_and_forced_fail_runs_keep_the_collection_order():
    items = [It("tests/timing/test_model.py::test_b"), It("tests/timing/test_rules_lb.py::test_a")]
    for run in ("", "stats", "fail", "mutant_generation"):
        assert mutated(run) is None
        assert order(items, run, {}) == items


def test_the_mutated_modules_own_tests_come_first_fastest_first_then_shared_words():
    items = [
        It("tests/timing/test_config.py::test_drain_fits_grace_in_a_config"),  # 3 words, other file
        It("tests/timing/test_rules_lb.py::test_keepalive_outlasts_idle"),  # own file, 0 words, slow
        It("tests/timing/test_rules_lb.py::test_idle_timeout_range"),  # own file, 0 words, fast
        It("tests/timing/test_rules_lb.py::test_drain_must_fit_the_grace[case1]"),  # own file, 2 words
        It("tests/timing/test_model.py::test_anything"),  # nothing, unknown duration
        It("tests/timing/test_plan.py::test_grace_shown"),  # 1 word
    ]
    took = {items[1].nodeid: 0.9, items[2].nodeid: 0.1, items[0].nodeid: 5.0}
    took[items[3].nodeid] = 0.5
    assert ids(order(items, MUTANT, took)) == ids([items[2], items[3], items[1], items[0], items[5], items[4]])


@given(st.lists(st.sampled_from(["test_rules_lb", "test_model", "test_rules_kube"]).flatmap(
    lambda f: st.builds(lambda n: It(f"tests/timing/{f}.py::test_{n}"),
                        st.sampled_from(["drain", "grace_fits", "x", "drain_fits_grace", "idle"]))), max_size=30),
       st.dictionaries(st.text(max_size=3), st.floats(0, 10), max_size=3))
def test_the_order_is_a_permutation_so_a_survivor_still_runs_every_test(items, took):
    assert sorted(ids(order(items, MUTANT, took))) == sorted(ids(items))


def test_missing_or_malformed_stats_give_no_durations(tmp_path):
    assert durations(tmp_path / "absent.json") == {}
    bad = tmp_path / "bad.json"
    bad.write_text('{"duration_by_test": [1, 2]}')
    assert durations(bad) == {}
    good = tmp_path / "good.json"
    good.write_text('{"duration_by_test": {"t::a": 0.5}, "other": 1}')
    assert durations(good) == {"t::a": 0.5}
