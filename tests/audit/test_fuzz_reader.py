"""Malformed and wrongly typed input: exit 2 with a message naming the input, never an exception.

Three shapes of bad input: arbitrary text, broken JSON, and valid manifests with one field
replaced by a value of the wrong type (`spec: 5`, `replicas: "x"`, a list where a map goes).
Each also must not fall through to the CLI's last-resort message: every problem an input can
have is named by the reader, the shape checks or the extraction.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, strategies as st

from lockstep.timing.cli import main

BUNDLES = Path(__file__).parent / "corpus"
VALID = [d for f in ("alb-ip-gated/input/web.yaml", "nlb-statefulsets/input/feeds.yaml",
                     "hpa-pdb-percent/input/checkout.yaml", "heartbeat-configmap/input/heartbeat.yaml")
         for d in yaml.safe_load_all((BUNDLES / f).read_text())]
TG_JSON = json.loads((BUNDLES / "tgb-described/input/target-groups.json").read_text())


def audit_stdin(data: bytes, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["audit", *args, "-"])
    finally:
        sys.stdin = old
    return code, out.getvalue(), err.getvalue()


def assert_clean(code: int, err: str) -> None:
    assert code in (0, 1, 2)
    assert "Traceback" not in err
    if code == 2:
        assert err.startswith("lockstep audit: "), err
        assert "cannot audit the input" not in err, err


def paths(obj, prefix=()):
    """Every key path of a nested document."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, (*prefix, i))


def replaced(obj, path, value):
    if not path:
        return value
    head, *rest = path
    copy = dict(obj) if isinstance(obj, dict) else list(obj)
    copy[head] = replaced(obj[head], rest, value)
    return copy


WRONG = st.one_of(
    st.integers(-10**6, 10**6), st.text(max_size=8), st.booleans(), st.none(),
    st.floats(allow_nan=False, allow_infinity=False), st.just([]), st.just({}),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.sampled_from(["x", "50%", "-5", "1m", "ip", "instance", "TCP", "HTTP", "0", "enabled"]),
)


@st.composite
def mutated_bundle(draw):
    docs = list(VALID)
    i = draw(st.integers(0, len(docs) - 1))
    all_paths = list(paths(docs[i]))
    path = draw(st.sampled_from(all_paths))
    docs[i] = replaced(docs[i], path, draw(WRONG))
    return yaml.safe_dump_all(docs).encode()


@given(mutated_bundle())
def test_a_wrongly_typed_field_is_named_never_raised(data):
    code, _, err = audit_stdin(data, "--format", "json")
    assert_clean(code, err)


@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_arbitrary_bytes_exit_cleanly(data):
    code, _, err = audit_stdin(data)
    assert_clean(code, err)


@st.composite
def broken_json(draw):
    text = json.dumps(TG_JSON, indent=2)
    cut = draw(st.integers(1, len(text) - 1))
    junk = draw(st.sampled_from(["", ",", "}", "{", "\"", "]", ":", "nul", "\t"]))
    return (text[:cut] + junk + text[cut + draw(st.integers(0, 5)):]).encode()


@given(broken_json())
def test_broken_target_group_json_exits_cleanly(data):
    code, _, err = audit_stdin(data)
    assert_clean(code, err)


YAML_TEXT = (BUNDLES / "kubectl-list-stdin/input/cluster.yaml").read_text()


@st.composite
def broken_yaml(draw):
    cut = draw(st.integers(0, len(YAML_TEXT) - 1))
    junk = draw(st.sampled_from(["", "{", "[", ":", "- ", "\t", "&a ", "*b", "!!binary ", "%TAG", "? ",
                                 "\n  - x\n", "'", '"', "---\n", "<<: *x\n", "\x00"]))
    return (YAML_TEXT[:cut] + junk + YAML_TEXT[cut + draw(st.integers(0, 20)):]).encode()


@given(broken_yaml())
def test_broken_yaml_exits_cleanly(data):
    code, _, err = audit_stdin(data)
    assert_clean(code, err)


@given(st.sampled_from(["TargetGroups", "LoadBalancerArns", "HealthCheckIntervalSeconds", "Port",
                        "Protocol", "TargetType", "Matcher"]), WRONG)
def test_a_wrongly_typed_target_group_field_is_named(key, value):
    doc = json.loads(json.dumps(TG_JSON))
    if key == "TargetGroups":
        doc[key] = value
    else:
        doc["TargetGroups"][0][key] = value
    code, _, err = audit_stdin(json.dumps(doc).encode())
    assert_clean(code, err)


def test_spec_five_names_file_line_and_field():
    data = b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: web}\nspec: 5\n"
    code, out, err = audit_stdin(data)
    assert (code, out) == (2, "")  # nothing else to report: the input problem alone
    assert err.strip() == "lockstep audit: <stdin>:4: Deployment web/api: spec: expected a mapping, got 5"


def test_a_list_where_a_mapping_goes_is_invalid_input():
    data = b"kind: Service\nmetadata: {name: api}\nspec:\n  selector: [app, api]\n"
    code, _, err = audit_stdin(data)
    assert code == 2 and "spec.selector: expected a mapping of strings to strings" in err


HEARTBEAT = next(d for d in VALID if d.get("kind") == "ConfigMap")


@st.composite
def mutated_heartbeat_config(draw):
    config = json.loads(HEARTBEAT["data"]["heartbeat.json"])
    path = draw(st.sampled_from(list(paths(config))))
    config = replaced(config, path, draw(WRONG))
    cm = {**HEARTBEAT, "data": {"heartbeat.json": json.dumps(config)}}
    return yaml.safe_dump_all([cm, *[d for d in VALID if d is not HEARTBEAT]]).encode()


@given(mutated_heartbeat_config())
def test_a_wrongly_typed_heartbeat_config_is_named_never_raised(data):
    code, _, err = audit_stdin(data)
    assert_clean(code, err)


# The fuzzer's find: `data: -1` on the ingress-nginx controller's ConfigMap reached the reader of
# its settings (AttributeError, the last-resort message). A ConfigMap's data is the API's map of
# strings to strings, whichever reader takes it (ingress-nginx, the mesh, the heartbeat).
@pytest.mark.parametrize("data", ["-1", "[a, b]", "{proxy-read-timeout: 60}", "{ok: 'x', n: {a: b}}"])
@pytest.mark.parametrize("name", ["ingress-nginx-controller", "istio", "lockstep-heartbeat"])
def test_a_configmap_whose_data_is_not_strings_is_named_with_its_line(name, data):
    doc = (f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: shop}}\n---\n"
           f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: shop}}\ndata: {data}\n")
    code, _, err = audit_stdin(doc.encode())
    assert code == 2, err
    assert err.strip().startswith(f"lockstep audit: <stdin>:8: ConfigMap shop/{name}: data: expected a mapping of "
                                  "strings to strings, got ")
    assert "\n" not in err.strip()
    assert_clean(code, err)
