"""The rules' side of `lockstep mutate`: a mutant judged against the unmutated stack without
judging all of it again.

The unmutated stack is judged once (`Baseline`), split into segments: per service, its own
(service- and lb-scope) findings, and the stack-scope findings of a scene holding that service
alone with the stack's own pieces (watchdog, heartbeat, failover, nodes). A mutant of one
service's number is judged on that service's two segments; every other segment is the
baseline's, so judging a mutant does not grow with the stack. That split is exact when each
stack-scope check judges a service from that service and the stack's own pieces, which is
checked on the unmutated stack: if the segments do not add up to the whole stack's findings,
every mutant re-runs the stack-scope checks over the whole stack instead.

Findings are judged rule by rule on first use: bisecting a rule's boundary (`timing.mutate`)
runs that rule alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Any, Iterable

from pydantic import ValidationError

from lockstep.timing.findings import Finding
from lockstep.timing.invariants import RULES, Ctx, Scene, context, walk
from lockstep.timing.model import Service, Stack
from lockstep.timing.mutate_model import Path, _problem, with_value
from lockstep.timing.references import reference_errors
from lockstep.timing.sim.spec import ServiceSpec, service_spec, stack_specs
# A finding's identity across mutants: (rule id, segment, subject, n-th of that triple).
Key = tuple[str, object, str, int]
Statuses = dict[Key, bool]

RULE_INDEX = {r.id: i for i, r in enumerate(RULES)}
_SERVICE_SCOPES = ("lb", "service")
_STACK_SCOPES = ("stack",)
_HAS = {scopes: frozenset(i for i, r in enumerate(RULES) if any(c.scope in scopes for c in r.checks))
        for scopes in (_SERVICE_SCOPES, _STACK_SCOPES)}
ALL_RULES = tuple(range(len(RULES)))
SCENE_FIELDS = tuple(f.name for f in fields(Scene))


# ---- segments ----------------------------------------------------------------------------------
class Segment:
    """One part of a stack's findings, judged rule by rule on first use: a service's own
    (service and lb scope), or the stack-scope findings of a scene."""

    __slots__ = ("key", "scene", "ctx", "scopes", "has", "found")

    def __init__(self, key: object, scene: Scene, ctx: Ctx, stack_scope: bool) -> None:
        self.key, self.scene, self.ctx = key, scene, ctx
        self.scopes = _STACK_SCOPES if stack_scope else _SERVICE_SCOPES
        self.has = _HAS[self.scopes]
        self.found: dict[int, list[Finding]] = {}

    def rule(self, i: int) -> list[Finding]:
        found = self.found.get(i)
        if found is None:
            found = walk(self.scene, self.ctx, (RULES[i],), self.scopes) if i in self.has else []
            self.found[i] = found
        return found

    def all(self) -> list[Finding]:
        return [f for i in ALL_RULES for f in self.rule(i)]

    def error_ids(self) -> list[str]:
        return [f.id for f in self.all() if f.status == "error"]


def statuses(segments: Iterable[Segment], rules: Iterable[int] = ALL_RULES) -> Statuses:
    """Error or not, per finding of `rules` in `segments`."""
    out: Statuses = {}
    segments = list(segments)
    for i in rules:
        for seg in segments:
            seen: dict[str, int] = {}
            for f in seg.rule(i):
                n = seen.get(f.subject, 0)
                seen[f.subject] = n + 1
                out[(f.id, seg.key, f.subject, n)] = f.status == "error"
    return out


# ---- what each rule reads ------------------------------------------------------------------------
# A rule is a function of what it reads: one that never read a piece of the scene, a field of
# a service, or the margin, judges the same whatever that piece, field or margin holds. The
# baseline notes, per rule and segment, what it read, so a mutant re-runs only the rules that
# read what it changed.
_SEEN: dict[str, set[str]] = {"scene": set(), "service": set(), "ctx": set()}
EVERYTHING = "*"  # a read of the whole object (its __dict__, a dump, a copy): no reuse
NOTHING: frozenset[str] = frozenset()


class _ReadScene(Scene):
    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        _SEEN["scene"].add(name)
        return object.__getattribute__(self, name)


class _ReadCtx(Ctx):
    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        _SEEN["ctx"].add(name)
        return object.__getattribute__(self, name)


@lru_cache(maxsize=None)
def _reading(cls: type[Service]) -> type[Service]:
    def __getattribute__(self: Service, name: str) -> Any:
        _SEEN["service"].add(name)
        return object.__getattribute__(self, name)

    return type(f"Reading{cls.__name__}", (cls,), {"__getattribute__": __getattribute__, "__module__": __name__})


@dataclass(frozen=True)
class Reads:
    """What one rule read in one or more segments."""

    scene: frozenset[str] = NOTHING
    service: frozenset[str] = NOTHING
    ctx: frozenset[str] = NOTHING

    def __or__(self, other: Reads) -> Reads:
        return Reads(self.scene | other.scene, self.service | other.service, self.ctx | other.ctx)

    def of(self, what: str, name: str) -> bool:
        read = getattr(self, what)
        return name in read or EVERYTHING in read


_ANY = Reads(frozenset({EVERYTHING}), frozenset({EVERYTHING}), frozenset({EVERYTHING}))


def _read_set(seen: set[str]) -> frozenset[str]:
    return frozenset({EVERYTHING} if any(n.startswith(("_", "model_")) for n in seen) else seen)


def _noting(seg: Segment, ctx: Ctx) -> Segment:
    """A copy of a segment whose scene, services and context note what is read."""
    scene = seg.scene
    spies = tuple(_reading(type(s)).model_construct(_fields_set=s.model_fields_set, **s.__dict__)
                  for s in scene.services)
    noted = _ReadScene(*(spies if f == "services" else getattr(scene, f) for f in SCENE_FIELDS))
    return Segment(seg.key, noted, _ReadCtx(ctx.margin_s, ctx.kubernetes_version), seg.scopes == _STACK_SCOPES)


def rule_reads(segments: list[Segment], ctx: Ctx) -> list[Reads]:
    """Per rule, what it read in any of `segments` (each judged again on a copy that notes its
    reads; a rule judged differently there is taken to read everything)."""
    copies = [_noting(seg, ctx) for seg in segments]
    out = []
    for i in ALL_RULES:
        for what in _SEEN:
            _SEEN[what] = set()
        same = all(c.rule(i) == seg.rule(i) for c, seg in zip(copies, segments))
        out.append(Reads(*(_read_set(_SEEN[w]) for w in ("scene", "service", "ctx"))) if same else _ANY)
    return out


def stack_scene(stack: Stack) -> Scene:
    """The stack's own pieces (watchdog, heartbeat, failover, nodes) with no service."""
    return _watching(stack, set())


def _watching(stack: Stack, names: set[str]) -> Scene:
    """The stack's scene with only the services named (and what refers to them by name)."""
    wd = stack.watchdog
    if wd is not None:
        wd = wd.model_copy(update={"watches": tuple(n for n in wd.watches if n in names)})
    return Scene(tuple(s for s in stack.services if s.name in names), wd, stack.heartbeat,
                 tuple(s for s in stack.heartbeat_specs if s.service in names), stack.failover,
                 stack.accept, stack.nodes)


def _scenes(stack: Stack) -> list[Scene]:
    """Per service, the scene of that service alone with the stack's own pieces."""
    bare = stack_scene(stack)
    wd, specs = stack.watchdog, stack.heartbeat_specs
    out = []
    for svc in stack.services:
        name = svc.name
        watched = bare.watchdog
        if wd is not None and name in wd.watches:
            watched = wd.model_copy(update={"watches": tuple(n for n in wd.watches if n == name)})
        out.append(replace(bare, services=(svc,), watchdog=watched,
                           heartbeat_specs=tuple(s for s in specs if s.service == name)))
    return out


def separable(whole: Segment, parts: list[Segment], bare: Scene) -> bool:
    """Whether the per-service stack segments add up to the whole stack's stack-scope findings:
    each holds the findings of the stack's own pieces (`bare`) once, and its service's."""
    expected = Counter(whole.all())
    own = Counter(Segment(None, bare, whole.ctx, True).all())
    summed: Counter[Finding] = Counter()
    for seg in parts:
        summed.update(seg.all())
    for _ in range(len(parts) - 1):
        expected.update(own)
    return summed == expected


@dataclass
class Variant:
    """The stack with one number changed, and the segments that had to be judged again (the
    others are the baseline's)."""

    stack: Stack
    index: int | None  # the service whose number changed; None: a stack-level number
    segments: list[Segment]


class Baseline:
    """The unmutated stack, judged once, split by what a mutant of one number can reach.

    A service's number reaches that service's own segments and its own simulation spec; every
    other service's findings and spec stay the baseline's. References between a stack's parts
    are names, never numbers, so a mutated service is validated alone and put in the place of
    the original. A stack-level number (margin, watchdog, heartbeat, failover, nodes) is
    validated as that field of the stack and judged on the whole stack's stack-scope findings
    (and, for the margin, every service's own), re-running the rules that read it.
    """

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.data = stack.model_dump()
        self.ctx = context(stack)
        self.own = [Segment(("service", k), Scene(services=(svc,)), self.ctx, False)
                    for k, svc in enumerate(stack.services)]
        self.scenes = _scenes(stack)
        parts = [Segment(("stack", k), scene, self.ctx, True) for k, scene in enumerate(self.scenes)]
        # the stack-scope findings of the whole stack: a stack-level number is judged on them
        self.whole = Segment(("stack", None), Scene.of(stack), self.ctx, True)
        self.separable = separable(self.whole, parts, stack_scene(stack))
        self.parts = parts if self.separable else [self.whole]
        # what each rule read: per service of its own two segments, and of the whole stack's
        self.reads = [rule_reads([own, part], self.ctx) for own, part in zip(self.own, self.parts)] \
            if self.separable else []
        self.own_reads = self.reads or [rule_reads([own], self.ctx) for own in self.own]
        self.whole_reads = rule_reads([self.whole], self.ctx)
        self.clean = not reference_errors(stack)  # a validated stack's references hold
        self._refs = [self._references(svc) for svc in stack.services]
        self._error_counts = Counter(i for seg in self.segments for i in seg.error_ids())
        self.errors = tuple(sorted(self._error_counts))
        self.specs = tuple(stack_specs(stack))
        self._statuses: dict[int | None, Statuses] = {}

    @property
    def segments(self) -> list[Segment]:
        return [*self.own, *self.parts]

    def reach(self, k: int | None) -> list[Segment]:
        """The baseline's segments a mutant of service `k` (None: a stack-level number) is judged on."""
        if k is None:
            return [*self.own, self.whole]
        return [self.own[k], self.parts[k] if self.separable else self.whole]

    def _references(self, svc: Service) -> list[str]:
        """What the stack's validator says about `svc` alone, with what refers to it by name."""
        return reference_errors(self.stack.model_copy(update={
            "services": (svc,), "watchdog": None, "failover": None,
            "heartbeat_specs": tuple(s for s in self.stack.heartbeat_specs if s.service == svc.name)}))

    @staticmethod
    def service_of(path: Path) -> int | None:
        return path[1] if path[0] == "services" else None  # type: ignore[return-value]

    def variant(self, path: Path, value: int) -> Variant | str:
        """The stack with `path` set to `value`, or the model's reason to reject it."""
        k = self.service_of(path)
        if k is None:
            return self._stack_variant(path, value)
        try:
            svc = Service.model_validate(with_value(self.data["services"][k], path[2:], value))
        except ValidationError as err:
            return _problem(err, path[:2])
        services = self.stack.services
        stack = self.stack.model_copy(update={"services": (*services[:k], svc, *services[k + 1:])})
        # What the stack's own validator checks across a service (e.g. a blue-green Rollout's
        # surge), which validating the service alone does not: as the whole stack would refuse it.
        # Only what it says about this service can have changed: the whole stack is checked
        # again only when that did.
        if not self.clean or self._references(svc) != self._refs[k]:
            problems = reference_errors(stack)
            if problems:
                return ": " + "; ".join(problems)
        own = Segment(("service", k), Scene(services=(svc,)), self.ctx, False)
        if not self.separable:
            return Variant(stack, k, [own, Segment(("stack", None), Scene.of(stack), self.ctx, True)])
        part = Segment(("stack", k), replace(self.scenes[k], services=(svc,)), self.ctx, True)
        for i, read in enumerate(self.reads[k]):
            if not read.of("service", path[2]):  # type: ignore[arg-type]
                own.found[i], part.found[i] = self.own[k].rule(i), self.parts[k].rule(i)
        return Variant(stack, k, [own, part])

    def _stack_variant(self, path: Path, value: int) -> Variant | str:
        # One field of the stack validated as the whole stack validates it: its type and
        # constraints in the stack's config, then the stack's own validator (the references).
        name = path[0]
        assert isinstance(name, str)
        stack = self.stack.model_copy()
        try:
            Stack.__pydantic_validator__.validate_assignment(
                stack, name, with_value(self.data[name], path[1:], value) if len(path) > 1 else value)
        except ValidationError as err:  # its own constraints, or the stack's references (after)
            return _problem(err)
        ctx = context(stack)
        whole = Segment(("stack", None), Scene.of(stack), ctx, True)
        # a rule that read nothing of what changed (the stack's piece, or the margin) judges
        # as the baseline did
        what, key = ("scene", name) if ctx == self.ctx else ("ctx", "margin_s")
        for i, read in enumerate(self.whole_reads):
            if not read.of(what, key):
                whole.found[i] = self.whole.rule(i)
        if ctx == self.ctx:
            return Variant(stack, None, [*self.own, whole])
        assert context(stack) == replace(self.ctx, margin_s=ctx.margin_s)  # only the margin is a number
        own = []
        for k, svc in enumerate(stack.services):
            seg = Segment(("service", k), Scene(services=(svc,)), ctx, False)
            for i, read in enumerate(self.own_reads[k]):
                if not read.of("ctx", "margin_s"):
                    seg.found[i] = self.own[k].rule(i)
            own.append(seg)
        return Variant(stack, None, [*own, whole])

    def base_statuses(self, k: int | None) -> Statuses:
        """The baseline's statuses of the findings a mutant of service `k` (None: of a
        stack-level number) is judged on."""
        if k not in self._statuses:
            self._statuses[k] = statuses(self.reach(k))
        return self._statuses[k]

    def error_rules(self, v: Variant) -> tuple[str, ...]:
        """Every error rule id of the whole mutated stack."""
        ids = {i for seg in v.segments for i in seg.error_ids()}
        if v.index is not None:
            own = Counter(i for seg in self.reach(v.index) for i in seg.error_ids())
            ids |= {i for i, n in self._error_counts.items() if n > own[i]}
        return tuple(sorted(ids))

    def changed_specs(self, v: Variant) -> list[ServiceSpec]:
        """The simulation specs the mutant changed."""
        if v.index is None:
            return [s for s, b in zip(stack_specs(v.stack), self.specs) if s != b]
        spec = service_spec(v.stack, v.stack.services[v.index])
        return [spec] if spec != self.specs[v.index] else []
