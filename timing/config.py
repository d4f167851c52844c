"""Stack config → model: the one place where Pulumi stack config becomes a `Stack`.

A stack's numbers live in `Pulumi.<stack>.yaml` under the `lockstep:` namespace (the
same file `pulumi up` reads). `infra/` hands `pulumi.Config` values to `stack_from_config`;
the CLI reads the YAML file itself. Errors come back as one line per problem, naming the
field path and what is allowed — never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from lockstep.timing.inputs import ConfigError, display_name, load_yaml, read_text
from lockstep.timing.model import Stack
from lockstep.timing.textio import cut

__all__ = ["EXAMPLE", "NAMESPACE", "ConfigError", "describe_errors", "lockstep_values", "present",
           "read_stack_file", "read_stack_values", "stack_from_config",
           "stack_values_from_text"]

NAMESPACE = "lockstep"
# The repository's Pulumi.example.yaml, bundled into the package (timing/bundled/ links to it).
EXAMPLE = Path(__file__).resolve().parent / "bundled" / "Pulumi.example.yaml"


def _is_secret(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"secure"}


def lockstep_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """The `lockstep:` keys of a stack's `config:` block, namespace stripped. Secrets
    (`{secure: ...}`) are not timing values and are left to the program."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        ns, sep, name = str(key).partition(":")
        if sep and ns == NAMESPACE and not _is_secret(value):
            out[name] = value
    return out


def describe_errors(err: ValidationError) -> list[str]:
    lines = []
    for e in err.errors():
        path = ".".join(str(p) for p in e["loc"]) or "(stack)"
        msg = e["msg"].removeprefix("Value error, ")
        shown = e.get("input")
        got = "" if isinstance(shown, (dict, list)) or e["type"] == "missing" else f" (got {cut(shown)})"
        if e["type"] == "extra_forbidden":
            msg = "unknown key (see docs/CONFIG.md for the keys this section takes)"
        lines.append(f"{NAMESPACE}:{path}: {msg}{got}")
    return lines


def present(values: Mapping[str, Any]) -> dict[str, Any]:
    """Pulumi.yaml gives optional sections the default `{}` (a key declared there without a
    default would be required of every stack): an empty optional section is an absent one,
    for `pulumi up` and `lockstep check` alike."""
    return {k: v for k, v in values.items()
            if not (v == {} and k in Stack.model_fields and Stack.model_fields[k].default is None)}


def stack_from_config(values: Mapping[str, Any], *, check_invariants: bool = False) -> Stack:
    """Validate `lockstep:` values (namespace stripped). With `check_invariants`, error
    findings raise `timing.invariants.InvariantErrors` (all at once)."""
    try:
        stack = Stack.model_validate(present(values), context={"skip_invariants": True})
    except ValidationError as err:
        raise ConfigError(describe_errors(err)) from None
    if check_invariants:
        from lockstep.timing.invariants import raise_errors

        raise_errors(stack)
    return stack


def read_stack_values(path: str | Path | None) -> tuple[dict[str, Any], Stack]:
    """The `lockstep:` values of `Pulumi.<stack>.yaml` (`-`: standard input; None: the bundled
    example) and the model they validate to. Every problem is a `ConfigError` naming the file."""
    target = EXAMPLE if path is None else path
    return stack_values_from_text(read_text(target), display_name(target))


def stack_values_from_text(text: str, name: str) -> tuple[dict[str, Any], Stack]:
    """`read_stack_values` of a file's text already read (`name` is how errors show it)."""
    [doc] = load_yaml(text, name, single=True) or [None]
    if not isinstance(doc, dict) or not isinstance(doc.get("config"), dict):
        raise ConfigError([f"{name}: not a Pulumi stack config (expected a top-level `config:` mapping)"])
    values = lockstep_values(doc["config"])
    if not values:
        raise ConfigError([f"{name}: no `{NAMESPACE}:` keys under `config:`"])
    try:
        return values, stack_from_config(values)
    except ConfigError as err:
        raise ConfigError([f"{name}: {line}" for line in err.lines]) from None


def read_stack_file(path: str | Path | None) -> Stack:
    """Read `Pulumi.<stack>.yaml` (`-`: standard input; None: the bundled example)."""
    return read_stack_values(path)[1]
