"""The policy pack served as the engine meets it: `python -m policies` starts pulumi-policy's
analyzer server (the real `PolicyPack`) and the tests talk gRPC to it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from pulumi.runtime.proto import analyzer_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def analyzer():
    proc = subprocess.Popen([sys.executable, "-m", "lockstep.policies"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        port = proc.stdout.readline().decode().strip()
        assert port.isdigit(), "the pack did not print its port"
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


