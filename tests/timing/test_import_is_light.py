"""`timing` is the pure core: importing it (and the rules, and config loading) must not pull
in pulumi — checked in a fresh interpreter, where nothing else has imported it yet."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
import {module}
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_aws', 'pulumi_kubernetes',
                                                            'boto3', 'botocore', 'kubernetes', 'pika'))
print(json.dumps(heavy))
"""


@pytest.mark.parametrize("module", ["lockstep", "lockstep.timing", "lockstep.timing.invariants", "lockstep.timing.config", "lockstep.timing.cli",
                                    "lockstep.timing.cmd_check"])
def test_importing_the_core_pulls_in_no_pulumi_or_cloud_client(module) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_the_probe_would_see_pulumi_if_it_were_imported() -> None:
    # guards the check above against passing vacuously (e.g. a module-name typo)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(module="pulumi")], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "pulumi" in json.loads(proc.stdout)


COMMAND_MODULES = """
import json, sys
from lockstep.timing import cli
try:
    cli.main({argv!r})
except SystemExit:
    pass
print(json.dumps(sorted(c.module for c in cli.COMMANDS.values() if c.module in sys.modules)))
"""


@pytest.mark.parametrize(("argv", "imported"), [
    (["--help"], []),
    (["audit", "--help"], ["lockstep.timing.audit.cli"]),
    (["check", "--help"], ["lockstep.timing.cmd_check"]),
    (["chek"], []),
])
def test_only_the_named_command_is_imported(argv, imported) -> None:
    proc = subprocess.run([sys.executable, "-c", COMMAND_MODULES.format(argv=argv)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == imported


def test_an_unknown_command_shares_the_parser_of_no_command() -> None:
    from lockstep.timing import cli

    assert cli.named_command(["--version"]) is None
    assert cli.named_command(["-h", "audit", "x"]) == "audit"
    assert cli.named_command(["chek", "check"]) is None  # the first word decides, as argparse's does
    assert cli.build_parser(cli.named_command(["chek"])) is cli.build_parser(cli.named_command(["zzz"]))


def test_top_level_help_lists_every_command_with_its_help_line(capsys) -> None:
    from lockstep.timing import cli

    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for name, entry in cli.COMMANDS.items():
        assert f"{name} {' '.join(entry.help.split())}" in out


VERSION_READ = """
import sys
from lockstep.timing import cli
parser = cli.build_parser(cli.named_command({argv!r}))
print('importlib.metadata' in sys.modules)
"""


def test_the_version_is_read_only_when_asked() -> None:
    """Reading the installed version (importlib.metadata) took ~20 ms of every command's
    start: `--version` reads it, building the parser does not."""
    probe = subprocess.run([sys.executable, "-c", VERSION_READ.format(argv=["audit", "x"])], capture_output=True,
                           text=True, timeout=60, check=False)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["False"]
    asked = subprocess.run([sys.executable, "-m", "lockstep", "--version"], capture_output=True, text=True,
                           timeout=60, check=False)
    assert asked.returncode == 0 and asked.stdout.startswith("lockstep ") and asked.stdout.count("\n") == 1
