"""The rules' side of `lockstep mutate`: the numbers of a stack, the values the model accepts
for each, and a mutant judged against the unmutated stack without judging all of it again.

The unmutated stack is judged once (`Baseline`), split into segments: per service, its own
(service- and lb-scope) findings, and the stack-scope findings of a scene holding that service
alone with the stack's own pieces (watchdog, heartbeat, failover, nodes). A mutant of one
service's number is judged on that service's two segments; every other segment is the
baseline's, so judging a mutant does not grow with the stack. That split is exact when each
stack-scope check judges a service from that service and the stack's own pieces, which is
checked on the unmutated stack: if the segments do not add up to the whole stack's findings,
every mutant re-runs the stack-scope checks over the whole stack instead.

Findings are judged rule by rule on first use: bisecting a rule's boundary runs that rule alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Any, Iterable, Iterator

from pydantic import ValidationError

from lockstep.timing.findings import Finding
from lockstep.timing.invariants import RULES, Ctx, Scene, context, walk
from lockstep.timing.model import Service, Stack
from lockstep.timing.references import reference_errors
from lockstep.timing.sim.spec import ServiceSpec, service_spec, stack_specs

Path = tuple[str | int, ...]
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


@dataclass(frozen=True)
class Mutant:
    path: Path
    original: int
    value: int
    why: str  # zero | min | max | half | double | x10 | "<rule-id> boundary±k"

    @property
    def where(self) -> str:
        return ".".join(str(p) for p in self.path)


# ---- walking the model -----------------------------------------------------------------------
def numbers(data: Any, path: Path = ()) -> Iterator[tuple[Path, int]]:
    """Every integer in a dumped stack (booleans are not numbers)."""
    if isinstance(data, bool):
        return
    if isinstance(data, int):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from numbers(value, path + (key,))
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            yield from numbers(value, path + (i,))


def with_value(data: dict[str, Any], path: Path, value: int) -> dict[str, Any]:
    """A copy of `data` with one number changed; only the containers on the path are copied
    (the rest is shared, and never modified)."""
    if not path:
        return value  # type: ignore[return-value]
    key, rest = path[0], path[1:]
    if isinstance(data, dict):
        out: Any = dict(data)
    else:
        out = list(data)
    out[key] = with_value(out[key], rest, value) if rest else value
    return out


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return Stack.model_json_schema()


def _deref(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = _schema()["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _options(node: dict[str, Any]) -> list[dict[str, Any]]:
    node = _deref(node)
    alts = node.get("anyOf") or node.get("oneOf")
    return [o for alt in alts for o in _options(alt)] if alts else [node]


def field_range(path: Path) -> tuple[int, int]:
    """The integer range the model accepts at `path`, from its pydantic constraints."""
    nodes = [_schema()]
    for key in path:
        nxt = []
        for node in (o for n in nodes for o in _options(n)):
            if isinstance(key, int) and node.get("type") == "array":
                items = node.get("items") or {}
                prefix = node.get("prefixItems")
                nxt.append(prefix[key] if prefix and key < len(prefix) else items)
            elif isinstance(key, str) and key in node.get("properties", {}):
                nxt.append(node["properties"][key])
            elif isinstance(key, str) and isinstance(node.get("additionalProperties"), dict):
                nxt.append(node["additionalProperties"])
        nodes = nxt
    lo, hi = None, None
    for node in (o for n in nodes for o in _options(n)):
        if node.get("type") == "integer":
            a = node.get("minimum", node.get("exclusiveMinimum", -(2**31)) + ("exclusiveMinimum" in node))
            b = node.get("maximum", node.get("exclusiveMaximum", 2**31) - ("exclusiveMaximum" in node))
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    return (lo if lo is not None else 0, hi if hi is not None else 2**31 - 1)


def build(data: dict[str, Any]) -> Stack:
    return Stack.model_validate(data)


def _problem(err: ValidationError, prefix: Path = ()) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in prefix + tuple(first["loc"]))
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"


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
# A rule is a function of what it reads: one that never read a piece of the scene, or a field
# of a service, judges the same whatever that piece or field holds. The baseline notes, per
# rule and segment, the scene's pieces and the service's fields it read, so a mutant re-runs
# only the rules that read what it changed.
_SEEN: dict[str, set[str]] = {"scene": set(), "service": set()}
EVERYTHING = "*"  # a read of the whole object (its __dict__, a dump, a copy): no reuse


class _ReadScene(Scene):
    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        _SEEN["scene"].add(name)
        return object.__getattribute__(self, name)


@lru_cache(maxsize=None)
def _reading(cls: type[Service]) -> type[Service]:
    def __getattribute__(self: Service, name: str) -> Any:
        _SEEN["service"].add(name)
        return object.__getattribute__(self, name)

    return type(f"Reading{cls.__name__}", (cls,), {"__getattribute__": __getattribute__, "__module__": __name__})


def _read_set(seen: set[str]) -> frozenset[str]:
    return frozenset({EVERYTHING} if any(n.startswith(("_", "model_")) for n in seen) else seen)


def _rule_reads(own: Segment, part: Segment, ctx: Ctx) -> tuple[list[frozenset[str]], list[frozenset[str]]]:
    """Per rule: the service's fields it read in either segment, and the pieces of the part's
    scene it read (both judged again on copies that note their reads, and compared)."""
    [svc] = own.scene.services
    spy = _reading(type(svc)).model_construct(_fields_set=svc.model_fields_set, **svc.__dict__)
    mine = Segment(own.key, Scene(services=(spy,)), ctx, False)
    theirs = Segment(part.key, _ReadScene(*(getattr(part.scene, f) for f in SCENE_FIELDS)), ctx, True)
    theirs.scene = replace(theirs.scene, services=(spy,))
    service_reads, scene_reads = [], []
    for i in ALL_RULES:
        _SEEN["service"], _SEEN["scene"] = set(), set()
        same = mine.rule(i) == own.rule(i) and theirs.rule(i) == part.rule(i)
        service_reads.append(_read_set(_SEEN["service"]) if same else frozenset({EVERYTHING}))
        scene_reads.append(_read_set(_SEEN["scene"]) if same else frozenset({EVERYTHING}))
    return service_reads, scene_reads


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


def separable(stack: Stack, parts: list[Segment], ctx: Ctx) -> bool:
    """Whether the per-service stack segments add up to the whole stack's stack-scope findings:
    each holds the findings of the stack's own pieces once, and its service's."""
    whole = Counter(Segment(None, Scene.of(stack), ctx, True).all())
    bare = Counter(Segment(None, stack_scene(stack), ctx, True).all())
    summed: Counter[Finding] = Counter()
    for seg in parts:
        summed.update(seg.all())
    for _ in range(len(parts) - 1):
        whole.update(bare)
    return summed == whole


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
    validated as that field of the stack and re-judges every stack-scope segment (and, for the
    margin, every service's).
    """

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.data = stack.model_dump()
        self.ctx = context(stack)
        self.own = [Segment(("service", k), Scene(services=(svc,)), self.ctx, False)
                    for k, svc in enumerate(stack.services)]
        self.scenes = _scenes(stack)
        parts = [Segment(("stack", k), scene, self.ctx, True) for k, scene in enumerate(self.scenes)]
        self.separable = separable(stack, parts, self.ctx)
        self.parts = parts if self.separable else [Segment(("stack", None), Scene.of(stack), self.ctx, True)]
        # per segment pair and rule, what the rule read of the service, and of the scene
        self.service_reads: list[list[frozenset[str]]] = []
        scene_reads: list[set[str]] = [set() for _ in ALL_RULES]
        if self.separable:
            for own, part in zip(self.own, self.parts):
                of_service, of_scene = _rule_reads(own, part, self.ctx)
                self.service_reads.append(of_service)
                for read, more in zip(scene_reads, of_scene):
                    read |= more
        self.scene_reads = [frozenset(r) if self.separable else frozenset({EVERYTHING}) for r in scene_reads]
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
            return self.segments
        return [self.own[k], self.parts[k] if self.separable else self.parts[0]]

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
        for i in self._unread(self.service_reads[k], path[2]):  # type: ignore[arg-type]
            own.found[i], part.found[i] = self.own[k].rule(i), self.parts[k].rule(i)
        return Variant(stack, k, [own, part])

    @staticmethod
    def _unread(reads: list[frozenset[str]], name: str) -> list[int]:
        return [i for i, read in enumerate(reads) if name not in read and EVERYTHING not in read]

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
        own = self.own if ctx == self.ctx else [Segment(("service", k), Scene(services=(svc,)), ctx, False)
                                                for k, svc in enumerate(stack.services)]
        if self.separable:
            parts = [Segment(("stack", k), scene, ctx, True) for k, scene in enumerate(_scenes(stack))]
        else:
            parts = [Segment(("stack", None), Scene.of(stack), ctx, True)]
        if ctx == self.ctx:  # a rule that read nothing of what changed judges as the baseline did
            for i in self._unread(self.scene_reads, name):
                for new, old in zip(parts, self.parts):
                    new.found[i] = old.rule(i)
        return Variant(stack, None, [*own, *parts])

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


# ---- one number's mutants ------------------------------------------------------------------------
class Variants:
    """One number's variants, each built and judged once, and their statuses rule by rule."""

    def __init__(self, base: Baseline, path: Path) -> None:
        self.base, self.path = base, path
        self.made: dict[int, Variant | str] = {}
        self.by_rule: dict[tuple[int, int], Statuses | None] = {}

    def __call__(self, value: int) -> Variant | str:
        v = self.made.get(value)
        if v is None:
            v = self.made[value] = self.base.variant(self.path, value)
        return v

    def statuses(self, value: int, rule: int | None = None) -> Statuses | None:
        """The statuses at `value` (of one rule's findings, or all); None: the model refuses it."""
        v = self(value)
        if isinstance(v, str):
            return None
        if rule is None:
            return statuses(v.segments)
        key = (value, rule)
        if key not in self.by_rule:
            self.by_rule[key] = statuses(v.segments, (rule,))
        return self.by_rule[key]


def boundaries(base: Baseline, path: Path, value: int, lo: int, hi: int,
               variants: Variants | None = None) -> dict[int, str]:
    """Values next to each point where a finding flips as this number moves from `value`
    towards either end of its range (bisection: rules are monotone in one number)."""
    at = variants or Variants(base, path)
    found: dict[int, str] = {}
    before = base.base_statuses(base.service_of(path))
    for end in (lo, hi):
        if end == value:
            continue
        far = at.statuses(end)
        if far is None:
            continue
        for key, status in before.items():
            if far.get(key, status) == status:
                continue
            rule = RULE_INDEX[key[0]]
            good, bad = value, end  # status flips somewhere in (good, bad]
            while abs(bad - good) > 1:
                mid = (good + bad) // 2
                probe = at.statuses(mid, rule)
                if probe is not None and probe.get(key, status) == status:
                    good = mid
                else:
                    bad = mid
            for x, k in ((good, "last same"), (bad, "first flipped"), (bad + (bad - good), "+1")):
                if lo <= x <= hi and x != value:
                    found.setdefault(x, f"{key[0]} boundary ({k})")
    return found


def candidates(base: Baseline, path: Path, value: int, variants: Variants | None = None) -> list[Mutant]:
    lo, hi = field_range(path)
    plain = {0: "zero", lo: "min", hi: "max", value // 2: "half", value * 2: "double", value * 10: "x10"}
    plain.update({x: why for x, why in boundaries(base, path, value, lo, hi, variants).items()
                  if x not in plain})
    return [Mutant(path, value, x, why) for x, why in sorted(plain.items()) if x != value]
