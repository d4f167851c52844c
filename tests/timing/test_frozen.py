"""`timing.frozen.quick_init`: the classes it speeds up are built as their dataclass declares.

Each field takes the argument given for it, by position or by name, or its declared default;
a missing or unknown argument is a TypeError; an instance stays frozen; equality, hashing and
repr are the dataclass's own. A class quick_init cannot serve is refused at import."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest

from lockstep.timing.bind.judge import Judgement
from lockstep.timing.expr import Expr
from lockstep.timing.findings import Finding, Term, Verdict
from lockstep.timing.frozen import quick_init

CLASSES = [Term, Finding, Verdict, Expr, Judgement]


def values(cls: type, tag: str) -> list[object]:
    """A distinct object per field (so a field set from the wrong argument shows)."""
    return [f"{tag}:{cls.__name__}.{f.name}" for f in dataclasses.fields(cls)]


def stored(obj: object) -> list[object]:
    return [getattr(obj, f.name) for f in dataclasses.fields(obj)]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_field_takes_its_argument_by_position_or_by_name(cls: type) -> None:
    args = values(cls, "given")
    assert stored(cls(*args)) == args
    names = [f.name for f in dataclasses.fields(cls)]
    assert stored(cls(**dict(zip(names, args)))) == args


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_an_omitted_field_takes_its_declared_default(cls: type) -> None:
    fields = dataclasses.fields(cls)
    required = [f for f in fields if f.default is dataclasses.MISSING]
    args = values(cls, "given")[:len(required)]
    obj = cls(*args)
    assert stored(obj) == args + [f.default for f in fields[len(required):]]
    for i in range(len(required), len(fields)):  # each default alone omitted, by name
        kwargs = {f.name: v for f, v in zip(fields, values(cls, "named")) if f is not fields[i]}
        assert getattr(cls(**kwargs), fields[i].name) is fields[i].default


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_missing_or_unknown_argument_is_refused(cls: type) -> None:
    required = [f for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    with pytest.raises(TypeError):
        cls(*values(cls, "x")[:len(required) - 1])
    with pytest.raises(TypeError):
        cls(*values(cls, "x"), "one too many")
    with pytest.raises(TypeError):
        cls(*values(cls, "x")[:len(required)], no_such_field=1)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_signature_is_the_dataclass_one(cls: type) -> None:
    params = list(inspect.signature(cls).parameters.values())
    fields = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fields]
    assert [p.default for p in params] == [inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
                                           for f in fields]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_an_instance_stays_frozen_and_compares_as_declared(cls: type) -> None:
    args = values(cls, "v")
    a, b = cls(*args), cls(*args)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(a, dataclasses.fields(cls)[0].name, "changed")
    assert not hasattr(a, "__dict__")
    if cls.__dataclass_params__.eq:  # type: ignore[attr-defined]
        assert a == b and hash(a) == hash(b)
    else:  # Expr: identity
        assert a != b
    assert dataclasses.replace(a, **{dataclasses.fields(cls)[0].name: "other"}) != a
    assert repr(a).startswith(f"{cls.__name__}(")


def test_the_same_class_built_both_ways_gives_equal_instances() -> None:
    @dataclass(frozen=True, slots=True)
    class Plain:
        a: int
        b: str = "b"
        c: tuple[int, ...] = ()
        d: object = field(default=None, compare=False)

    @quick_init
    @dataclass(frozen=True, slots=True)
    class Quick:
        a: int
        b: str = "b"
        c: tuple[int, ...] = ()
        d: object = field(default=None, compare=False)

    for args, kwargs in [((1,), {}), ((1, "x"), {}), ((1,), {"c": (2,)}), ((1, "y", (3,), "d"), {}), ((), {"a": 4, "d": 5})]:
        assert stored(Plain(*args, **kwargs)) == stored(Quick(*args, **kwargs))


@pytest.mark.parametrize("make", [
    lambda: dataclass(frozen=True)(type("NoSlots", (), {"__annotations__": {"a": int}})),
    lambda: dataclass(slots=True)(type("NotFrozen", (), {"__annotations__": {"a": int}})),
    lambda: dataclass(frozen=True, slots=True)(type("Factory", (), {"__annotations__": {"a": list},
                                                                     "a": field(default_factory=list)})),
    lambda: dataclass(frozen=True, slots=True)(type("KwOnly", (), {"__annotations__": {"a": int},
                                                                    "a": field(kw_only=True)})),
    lambda: type("NotADataclass", (), {}),
], ids=["no slots", "not frozen", "default factory", "keyword-only", "not a dataclass"])
def test_a_class_it_cannot_serve_is_refused(make) -> None:
    with pytest.raises(TypeError, match="quick_init"):
        quick_init(make())
