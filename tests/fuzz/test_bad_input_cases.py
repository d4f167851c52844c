"""Every way of bad input a new user (and a fuzzer) found ends in exit 2 and exactly one stderr
line naming the file and line, or the field, or the option — never a traceback, a hang or
another exit code. One test per case; the fuzz suite next to this file starts from the same
cases."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.support import EXAMPLE_TEXT, ROOT, assert_clean, cli, with_margin
from lockstep.timing.inputs import MAX_ALIAS_VALUES, MAX_DEPTH, MAX_INPUT_BYTES, MAX_INT_DIGITS, MIB
from lockstep.timing.simulate import MAX_PHASES
from lockstep.timing.textio import SHOWN_CHARS

LOCKSTEP = Path(sys.executable).with_name("lockstep")
SEED003 = ROOT / "examples" / "Pulumi.seed003.yaml"
MARGIN_LINE = 8  # `lockstep:margin_s` in Pulumi.example.yaml
assert EXAMPLE_TEXT.splitlines()[MARGIN_LINE - 1] == "  lockstep:margin_s: 5"


def one_line(argv: list[str], stdin: bytes = b"") -> str:
    run = cli(argv, stdin)
    assert run.code == 2, run
    assert_clean(run, argv[0])
    assert run.out == "" and len(run.err_lines) == 1, run
    return run.err_lines[0]


def stack(tmp_path: Path, text: str) -> str:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


# ---- the stack config: values YAML cannot construct, limits, duplicates ------------------------
@pytest.mark.parametrize(("value", "problem"), [
    ("!!int abc", "cannot read 'abc' as !!int"),
    ("!!int ²", "cannot read '²' as !!int"),  # a digit to str.isdigit, not to int(): was a traceback
    ("!!bool maybe", "cannot read 'maybe' as !!bool"),
    ("!!timestamp foo", "cannot read 'foo' as !!timestamp"),
    ("!!float x", "cannot read 'x' as !!float"),
    ("2001-13-45", "cannot read '2001-13-45' as !!timestamp"),  # an implicit date that is no date
    ("!!seq {a: 1}", "!!seq on a mapping: expected a list"),
    ("9" * (MAX_INT_DIGITS + 1), f"an integer of {MAX_INT_DIGITS + 1} digits: more than the limit of "
                                 f"{MAX_INT_DIGITS}"),
    ("9" * 4301, f"an integer of 4301 digits: more than the limit of {MAX_INT_DIGITS}"),
    ("[" * 500 + "]" * 500, f"nested deeper than the limit of {MAX_DEPTH} levels"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested deeper than the limit of {MAX_DEPTH} levels"),
])
def test_a_value_yaml_cannot_read_is_one_line_at_its_file_and_line(tmp_path, value, problem):
    path = stack(tmp_path, with_margin(value))
    assert one_line(["check", path]) == f"lockstep check: {path}:{MARGIN_LINE}: {problem}"


def test_nesting_up_to_the_limit_is_read_and_judged_by_the_field(tmp_path):
    depth = MAX_DEPTH - 2  # the stack's own two levels (the document, `config:`) count too
    path = stack(tmp_path, with_margin("[" * depth + "]" * depth))
    assert one_line(["check", path]) == (f"lockstep check: {path}: lockstep:margin_s: Input should be a "
                                         "valid integer")


def test_a_duplicate_key_is_refused_at_the_second_one(tmp_path):
    path = stack(tmp_path, with_margin("5\n  lockstep:margin_s: 6"))
    assert one_line(["check", path]) == (f"lockstep check: {path}:{MARGIN_LINE + 1}: duplicate key "
                                         f"'lockstep:margin_s' (first at line {MARGIN_LINE})")


def test_a_key_repeated_only_by_a_merge_is_overridden_as_yaml_says(tmp_path):
    text = EXAMPLE_TEXT.replace("config:\n", "base: &b {x: 1}\nconfig:\n  <<: *b\n  x: 2\n", 1)
    run = cli(["check", stack(tmp_path, text)])
    assert run.code == 0, run.err


def test_aliases_that_expand_past_the_limit_are_refused(tmp_path):
    rows = ["config:", "  a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    rows += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 7)]
    path = stack(tmp_path, "\n".join(rows) + "\n")
    assert one_line(["check", path]) == (f"lockstep check: {path}:1: aliases expand to more than the limit "
                                         f"of {MAX_ALIAS_VALUES:,} values")


def test_an_alias_inside_itself_is_refused(tmp_path):
    path = stack(tmp_path, "config:\n  lockstep:services: &s [*s]\n")
    assert one_line(["check", path]) == (f"lockstep check: {path}:2: an alias refers to a mapping or list "
                                         "that contains it")


def test_an_lb_kind_given_as_a_list_is_named_by_its_field(tmp_path):
    path = stack(tmp_path, EXAMPLE_TEXT.replace("        kind: alb\n", "        kind: [alb]\n", 1))
    assert one_line(["check", path]) == (f"lockstep check: {path}: lockstep:services.0.lb.kind: Input should "
                                         "be 'alb' or 'nlb'")


@pytest.mark.parametrize("command", ["check", "render"])
def test_a_date_value_is_refused_by_its_field_in_check_and_render_alike(tmp_path, command):
    path = stack(tmp_path, with_margin("2001-01-01"))
    argv = [command, path] + (["-o", str(tmp_path / "out")] if command == "render" else [])
    assert one_line(argv) == (f"lockstep {command}: {path}: lockstep:margin_s: Input should be a valid "
                              "integer (got '2001-01-01')")
    assert not (tmp_path / "out").exists()


def test_a_huge_bad_value_is_echoed_only_as_a_short_prefix(tmp_path):
    path = stack(tmp_path, with_margin('"' + "x" * (20 * MIB) + '"'))
    line = one_line(["check", path])
    assert line.startswith(f"lockstep check: {path}: lockstep:margin_s: Input should be a valid integer (got 'xxx")
    assert line.endswith("x…)") and len(line) < len(path) + 100 + SHOWN_CHARS


# ---- paths ---------------------------------------------------------------------------------------
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "Pulumi.fifo.yaml"
    os.mkfifo(fifo)
    assert one_line(["check", str(fifo)]) == (f"lockstep check: {fifo}: a FIFO, not a regular file (to read "
                                              "it, pass - and redirect it to standard input)")


@pytest.mark.parametrize("command", ["check", "audit"])
def test_a_device_is_refused_unless_it_is_standard_input(command):
    assert one_line([command, "/dev/zero"]) == (f"lockstep {command}: /dev/zero: a character device, not a "
                                                "regular file (to read it, pass - and redirect it to standard input)")


def test_standard_input_is_read_when_asked_for():
    run = cli(["check", "-"], EXAMPLE_TEXT.encode())
    assert run.code == 0 and run.out.splitlines()[-1].startswith("lockstep check -: 0 error"), run


def test_a_symlink_loop_is_named(tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    assert one_line(["check", str(loop)]) == f"lockstep check: {loop}: too many levels of symbolic links (a symlink loop?)"


def test_a_name_too_long_is_named_by_a_cut_prefix():
    name = "/tmp/" + "n" * 5000
    line = one_line(["audit", name])
    assert line == f"lockstep audit: {name[:199]}…: file name too long"


def test_a_path_below_a_regular_file_is_named(tmp_path):
    below = tmp_path / "Pulumi.example.yaml" / "x.yaml"
    (tmp_path / "Pulumi.example.yaml").write_text(EXAMPLE_TEXT)
    assert one_line(["check", str(below)]) == (f"lockstep check: {below}: a part of the path is a file, not "
                                               "a directory")


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path):
    big = tmp_path / "Pulumi.big.yaml"
    with big.open("wb") as f:
        f.truncate(MAX_INPUT_BYTES + 1)  # sparse: nothing to write, nothing read
    assert one_line(["check", str(big)]) == (f"lockstep check: {big}: larger than the "
                                             f"{MAX_INPUT_BYTES // MIB} MiB input limit")


def test_standard_input_over_the_size_limit_is_refused():
    line = one_line(["audit", "-"], b"#" * (MAX_INPUT_BYTES + 1))
    assert line == f"lockstep audit: <stdin>: larger than the {MAX_INPUT_BYTES // MIB} MiB input limit"


# ---- render -o -----------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["file", "/dev/null"])
def test_render_into_something_that_is_not_a_directory_is_refused_before_rendering(tmp_path, target):
    out = tmp_path / "a-file" if target == "file" else Path(target)
    if target == "file":
        out.write_text("")
    assert one_line(["render", "-o", str(out)]) == (f"lockstep render: -o {out}: not a directory (render writes "
                                                    "k8s/, aws/ and index.json into a directory)")


def test_render_below_a_file_is_refused(tmp_path):
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "a-file" / "out"
    assert one_line(["render", "-o", str(out)]) == f"lockstep render: -o {out}: {tmp_path / 'a-file'} is not a directory"


def test_render_into_a_directory_that_cannot_be_written_is_one_line(tmp_path):
    if os.geteuid() == 0:  # root writes through file modes: use a directory the kernel refuses
        out = Path("/sys/fs/lockstep-render")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        out = ro / "out"
    line = one_line(["render", "-o", str(out)])
    assert line.startswith(f"lockstep render: -o {out}: cannot write {out}"), line


def test_render_into_a_missing_directory_creates_it(tmp_path):
    out = tmp_path / "missing" / "deeper"
    run = cli(["render", "-o", str(out)])
    assert run.code == 0, run.err
    assert (out / "index.json").is_file()


# ---- output and locale (the real process: its own stdout) ------------------------------------------
def lockstep(*args: str, env: dict[str, str] | None = None, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([str(LOCKSTEP), *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=120, check=False, env={**os.environ, **(env or {})})


def test_output_to_a_full_disk_is_one_line_and_exit_2():
    with open("/dev/full", "w") as full:
        proc = lockstep("check", stdout=full)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["lockstep check: cannot write the output: no space left on device"]


def test_a_reader_that_stops_reading_is_not_an_error():
    proc = subprocess.run(f"'{LOCKSTEP}' check --all | head -1", shell=True, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.stdout.startswith("OK ") and proc.stderr == ""


def test_an_ascii_only_locale_gets_ascii_fallbacks_not_a_crash():
    proc = lockstep("check", str(SEED003), env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 1 and proc.stderr == ""
    assert proc.stdout.isascii()
    assert "interval_s 30 x lb.health_check.unhealthy_threshold 2" in proc.stdout
    assert "slack -60s -> raise the drain to >=65s" in proc.stdout


def test_an_ascii_only_locale_degrades_error_lines_too():
    proc = lockstep("simulate", "--phases", "0", env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"lockstep simulate: --phases: must be 1-{MAX_PHASES} (got 0)"]


# ---- CLI arguments --------------------------------------------------------------------------------
@pytest.mark.parametrize(("argv", "line"), [
    (["simulate", "--phases", str(10**20)], f"lockstep simulate: --phases: must be 1–{MAX_PHASES} (got {10**20})"),
    (["simulate", "--phases", str(MAX_PHASES + 1)], f"lockstep simulate: --phases: must be 1–{MAX_PHASES} "
                                                    f"(got {MAX_PHASES + 1})"),
    (["mutate", "--phases", "0"], f"lockstep mutate: --phases: must be 1–{MAX_PHASES} (got 0)"),
    (["mutate", "--scenario", "drain"], "lockstep mutate: --scenario: 'drain' is not one of rollout, replace, "
                                        "crash, quiet, reload, proxy-stop, node-drain, consolidation, "
                                        "spot-interruption, node-shutdown, etp-local, all"),
    # a misspelt name beside `all` is still an error, not a silent `all`
    (["simulate", "--scenario", "all", "--scenario", "node-drian"],
     "lockstep simulate: --scenario: 'node-drian' is not one of rollout, replace, crash, quiet, reload, proxy-stop, "
     "node-drain, consolidation, spot-interruption, node-shutdown, etp-local, all"),
    (["simulate", "--rate", "nan"], "lockstep simulate: --rate: must be above 0 and at most 10000 requests/s (got nan)"),
    (["simulate", "--phases", "x" * 100], "lockstep simulate: error: argument --phases: invalid int value: "
                                          f"'{'x' * (SHOWN_CHARS - 2)}… (see lockstep simulate --help)"),
    (["audit", "--margin", "9" * 5000, "-"], "lockstep audit: error: argument --margin: expected whole seconds "
                                             f"0–86400, got '{'9' * (SHOWN_CHARS - 2)}… (see lockstep audit --help)"),
])
def test_an_out_of_bounds_argument_is_one_line_naming_the_option(argv, line):
    assert one_line(argv) == line


# ---- the audit's reader --------------------------------------------------------------------------
JSON_ONLY = '{"note": "\\ud83d\\ude00",\n'
DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: web}\n"


@pytest.mark.parametrize(("text", "line"), [
    (DEPLOYMENT + "spec: !!seq {replicas: 2}\n", "<stdin>:4: !!seq on a mapping: expected a list"),
    (DEPLOYMENT + "spec:\n  paused: !!bool maybe\n", "<stdin>:5: cannot read 'maybe' as !!bool"),
    (DEPLOYMENT + "spec: {}\nkind: StatefulSet\n", "<stdin>:5: duplicate key 'kind' (first at line 2)"),
    (DEPLOYMENT + "spec: {replicas: " + "1" * 4301 + "}\n",
     f"<stdin>:4: an integer of 4301 digits: more than the limit of {MAX_INT_DIGITS}"),
    # A surrogate-pair escape is JSON that YAML 1.1 refuses: the `json` reading has the same checks.
    (JSON_ONLY + '"kind": "Deployment", "kind": "Service"}', "<stdin>: malformed JSON: duplicate key 'kind'"),
    (JSON_ONLY + '"spec": {"replicas": ' + "1" * 4301 + "}}",
     f"<stdin>: an integer of 4301 digits: more than the limit of {MAX_INT_DIGITS}"),
    ('{"kind": "Deployment",\n"kind": "Service"}', "<stdin>:2: duplicate key 'kind' (first at line 1)"),
])
def test_an_audit_input_yaml_cannot_read_is_one_line_at_its_line(text, line):
    assert one_line(["audit", "-"], text.encode()) == f"lockstep audit: {line}"


NOTHING = ("no workload, target group or heartbeat ConfigMap in the input (pass --allow-empty to accept that)")


@pytest.mark.parametrize("what", ["empty file", "empty stdin", "only non-Kubernetes documents", "a Namespace"])
def test_an_audit_with_nothing_to_audit_exits_2_unless_allowed(tmp_path, what):
    text = {"empty file": "", "empty stdin": "", "only non-Kubernetes documents": "services:\n  web: {image: x}\n",
            "a Namespace": "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n"}[what]
    if what == "empty stdin":
        argv, stdin, name = ["audit", "-"], b"", "<stdin>"
    else:
        path = tmp_path / "in.yaml"
        path.write_text(text)
        argv, stdin, name = ["audit", str(path)], b"", str(path)
    assert one_line(argv, stdin) == f"lockstep audit: nothing to audit in {name}: {NOTHING}"
    allowed = cli([*argv[:1], "--allow-empty", *argv[1:]], stdin)
    assert allowed.code == 0 and allowed.err == "", allowed


# ---- found by bench/fuzz: ports of the wrong type are named by their field (shape checks) ----------
SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: web}\nspec:\n  selector: {app: api}\n"
INGRESS_PORT = (DEPLOYMENT + "spec:\n  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n"
                "    spec: {containers: [{name: api, image: x, ports: [{containerPort: 8080}]}]}\n---\n"
                + SERVICE + "  ports: [{port: 80, targetPort: 8080}]\n---\n"
                "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: api\n  namespace: web\n"
                "  annotations: {alb.ingress.kubernetes.io/target-type: ip}\nspec:\n  ingressClassName: alb\n"
                "  defaultBackend: {service: {name: api, port: {number: PORT}}}\n")


@pytest.mark.parametrize("port", ["[1, a]", "{a: 1}"])
def test_an_ingress_backend_port_that_is_a_collection_is_named_by_its_field(port):
    run = cli(["audit", "-"], INGRESS_PORT.replace("PORT", port).encode())
    assert run.code == 2 and "cannot audit the input" not in run.err, run.err
    assert len(run.err_lines) == 1 and "port" in run.err_lines[0], run.err


def test_a_service_target_port_of_infinity_is_named_by_its_field():
    text = INGRESS_PORT.replace("PORT", "80").replace("targetPort: 8080", "targetPort: .inf")
    run = cli(["audit", "-"], text.encode())
    assert run.code == 2 and "cannot audit the input" not in run.err, run.err
    assert len(run.err_lines) == 1 and "port" in run.err_lines[0], run.err


# ---- long lines: the end says what is wrong ----------------------------------------------------
def test_a_bad_value_in_a_deep_directory_still_ends_with_its_allowed_range(tmp_path):
    # Two paths of ~180 characters in one line (the workload's, then the Service's) once cut the
    # line's end: the allowed range went, and a CI machine's long checkout path showed it.
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 5)
    deep.mkdir(parents=True)
    source = ROOT / "tests" / "audit" / "corpus" / "nodes-svc-invalid" / "input" / "feeds.yaml"
    (deep / "feeds.yaml").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    run = cli(["audit", "--format", "json", "--kubernetes-version", "1.30", str(deep)])
    assert run.code == 2 and "Traceback" not in run.err
    lines = run.err_lines
    assert any(line.endswith("expected whole seconds 0–360000, got '400000'") for line in lines), lines
    assert any(line.endswith("expected one of Cluster, Local, got 'local'") for line in lines), lines


@pytest.mark.parametrize("length", [0, 1, 599, 600, 601, 5000])
def test_an_error_line_is_cut_in_its_middle_keeping_both_ends(length):
    from lockstep.timing.cli import LINE_CHARS, one_line

    text = "".join(chr(ord("a") + i % 26) for i in range(length))
    line = one_line(text)
    assert len(line) == min(length, LINE_CHARS)
    if length <= LINE_CHARS:
        assert line == text
    else:
        head, _, tail = line.partition("…")
        assert text.startswith(head) and text.endswith(tail) and len(head) == LINE_CHARS // 2
