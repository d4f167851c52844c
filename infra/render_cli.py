"""`lockstep render [STACK_CONFIG] -o DIR`: what `pulumi up` would create, without a cloud.

Runs the Pulumi program under Pulumi's mock runtime (`infra.render.record`) and writes:

    DIR/k8s/NN-<component>.yaml   the component's Kubernetes objects, applyable
                                  (`kubectl apply -f DIR/k8s/`; NN keeps namespaces first)
    DIR/aws/<component>.json      the component's AWS resources: type, name and inputs
    DIR/index.json                every resource: URN, type, file

Values the cloud would assign are stand-ins ending in `rendered-offline` (e.g. the target
group ARN in a TargetGroupBinding). Secrets are never read: the broker URL is a placeholder
passed as a Pulumi secret, and every secret is written as `[secret]`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockstep.timing.cmd_check import add_stack_argument

if TYPE_CHECKING:
    from lockstep.infra.render import Recorded

EPILOG = ("exit codes: 0 rendered, 1 error findings (nothing rendered), "
          "2 unreadable or invalid input (nothing rendered)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_argument(parser)
    parser.add_argument("-o", "--output", metavar="DIR", required=True,
                        help="directory to write into (its k8s/, aws/ and index.json are replaced)")


def stack_values(path: str | None) -> dict[str, Any]:
    """The stack file's `lockstep:` values, read and validated exactly as `lockstep check`
    reads them (so every message, exit 2, is the same). Only values the model accepted reach
    the program, which passes them to Pulumi as JSON: an odd YAML value (a date, bytes) is
    refused here by its field, never by `json.dumps` mid-render."""
    from lockstep.timing.config import read_stack_values

    return read_stack_values(path)[0]


def check_output(out: Path) -> None:
    """`-o` must be a directory or a path one can be made at: refused before the program runs."""
    from lockstep.timing.config import ConfigError
    from lockstep.timing.inputs import display_name

    if out.exists() and not out.is_dir():
        raise ConfigError([f"-o {display_name(out)}: not a directory (render writes k8s/, aws/ and "
                           "index.json into a directory)"])
    parent = next((p for p in (out, *out.parents) if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ConfigError([f"-o {display_name(out)}: {display_name(parent)} is not a directory"])


def plain(value: Any) -> Any:
    """Mock inputs carry every number as a float; manifests need Kubernetes' integers. Keys
    are sorted so a render diffs cleanly against the previous one."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain(value[k]) for k in sorted(value) if not k.startswith("__")}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def manifest(r: Recorded) -> dict[str, Any]:
    """A Kubernetes object as `kubectl apply` takes it: apiVersion, kind, metadata, body."""
    body = plain(r.inputs)
    head = {k: body.pop(k) for k in ("apiVersion", "kind", "metadata")}
    return {**head, **body}


def components(resources: list[Recorded]) -> list[tuple[Recorded, list[Recorded]]]:
    """Top-level components in creation order, each with its custom resources."""
    tops = [r for r in resources if not r.custom and r.parent is not None
            and r.parent.split("::")[2] == "pulumi:pulumi:Stack"]
    children: dict[str, list[Recorded]] = defaultdict(list)
    by_urn = {r.urn: r for r in resources}
    for r in resources:
        if not r.custom:
            continue
        top = r
        while top.parent in by_urn:
            top = by_urn[top.parent]
        children[top.urn].append(r)
    return [(c, children[c.urn]) for c in tops]


MAX_LINES = 20  # the summary stays on one screen: beyond this, one line per component type


def summary(rows: list[tuple[Recorded, list[Recorded], list[str]]]) -> list[str]:
    if len(rows) <= MAX_LINES:
        return [f"  {c.kind:<17} {c.name:<20} {len(m):>3}  {', '.join(dict.fromkeys(r.kind for r in m))}"
                f"  → {' '.join(f)}" for c, m, f in rows]
    by_type: dict[str, list[tuple[Recorded, list[Recorded], list[str]]]] = defaultdict(list)
    for row in rows:
        by_type[row[0].kind].append(row)
    return [f"  {kind:<17} ×{len(group):<19} {sum(len(m) for _, m, _ in group):>3}  "
            f"{', '.join(dict.fromkeys(r.kind for _, m, _ in group for r in m))}  "
            f"→ {sum(len(f) for _, _, f in group)} files"
            for kind, group in by_type.items()]


def write(resources: list[Recorded], out: Path) -> list[tuple[Recorded, list[Recorded], list[str]]]:
    """Write the files; returns (component, its resources, its files) per component."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    for sub in ("k8s", "aws"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    index, rows = [], []
    comps = components(resources)
    width = max(2, len(str(len(comps))))  # zero-padded so `kubectl apply -f` keeps the order
    n = 0
    for comp, members in comps:
        files = []
        kube = [r for r in members if r.is_kubernetes]
        cloud = [r for r in members if not r.is_kubernetes]
        if kube:
            path = out / "k8s" / f"{n:0{width}d}-{comp.name}.yaml"
            n += 1
            path.write_text(yaml.dump_all([manifest(r) for r in kube], Dumper=dumper,
                                          sort_keys=False), encoding="utf-8")
            files.append(path)
        if cloud:
            path = out / "aws" / f"{comp.name}.json"
            path.write_text(json.dumps([{"type": r.type, "name": r.name, "urn": r.urn,
                                         "dependsOn": list(r.depends_on),
                                         "inputs": plain(r.inputs)} for r in cloud],
                                       indent=2) + "\n", encoding="utf-8")
            files.append(path)
        for r in members:
            index.append({"urn": r.urn, "type": r.type, "name": r.name,
                          "file": str((files[0] if r.is_kubernetes else files[-1]).relative_to(out))})
        rows.append((comp, members, [str(f.relative_to(out)) for f in files]))
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return rows


def run(args: argparse.Namespace) -> int:
    from lockstep.infra.render import record
    from lockstep.timing.config import EXAMPLE, ConfigError
    from lockstep.timing.invariants import InvariantErrors

    values = stack_values(args.stack_config)
    source = args.stack_config or EXAMPLE.name
    out = Path(args.output)
    check_output(out)
    try:
        resources = record(values)
    except ConfigError as err:  # the program's own refusal (the model has accepted the values)
        raise ConfigError([f"{source}: {line}" for line in err.lines]) from None
    except InvariantErrors as err:
        for f in err.findings:
            print(f.render())
        print(f"lockstep render {source}: {len(err.findings)} error finding(s); nothing rendered",
              file=sys.stderr)
        return 1
    try:
        rows = write(resources, out)
    except OSError as err:
        from lockstep.timing.inputs import display_name

        where = display_name(err.filename) if err.filename else display_name(out)
        raise ConfigError([f"-o {display_name(out)}: cannot write {where}: "
                           f"{(err.strerror or err.__class__.__name__).lower()}"]) from None
    custom = [r for r in resources if r.custom]
    kube = sum(r.is_kubernetes for r in custom)
    print(f"lockstep render {source} → {out}/  ({len(rows)} components, {kube} Kubernetes "
          f"objects, {len(custom) - kube} AWS resources)")
    print("\n".join(summary(rows)))
    return 0
