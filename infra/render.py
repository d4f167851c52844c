"""Run the Pulumi program under Pulumi's mock runtime and record every resource it registers.

One recorder for everything that needs the program's resources without a cloud: the
`lockstep render` command, the infra tests and the policy-pack tests.

    from lockstep.infra.render import record
    resources = record(values, {"rabbitmq_url": "amqp://..."})

`record(values, secrets=None) -> list[Recorded]` (stable API)
  values   the stack's `lockstep:` config values with the namespace stripped, as
           `timing.config.lockstep_values` returns them (Python objects, not strings).
  secrets  `lockstep:` secret config values, namespace stripped (e.g. `{"rabbitmq_url": ...}`);
           a missing broker secret is replaced by `PLACEHOLDER_BROKER_URL`, marked secret.
  returns  every resource in registration order (components included, the root stack not).
  raises   `timing.config.ConfigError` (invalid input) or
           `timing.invariants.InvariantErrors` (error findings) — then nothing was registered.

`Recorded` fields: `urn`, `type` (e.g. `aws:lb/targetGroup:TargetGroup`,
`kubernetes:apps/v1:Deployment`), `name` (the Pulumi resource name), `custom` (False for
components), `parent` (URN or None), `inputs` (engine input names, i.e. camelCase, as the
mocks see them; numbers come back as floats; every leaf of a Pulumi secret replaced by `SECRET_MARK`),
`secret_paths` (dotted paths of the inputs that were secrets), `depends_on` (URNs of the
explicit `depends_on` resource option, recorded by a stack transformation), `provider`
(provider reference or None), `outputs` (a component's `register_outputs`, redacted), and
for custom resources the mock-assigned `id` and `arn` (AWS resources only).

Under the mocks a resource's outputs are its inputs, plus a stand-in `arn`/`id` ending in
`MOCK_SUFFIX` (e.g. the TargetGroup ARN the TargetGroupBinding carries in a render).
`Recorder().run(values, secrets)` is the same call keeping the monitor, so a test can see
that a failed run registered nothing (`Recorder.registered`).
This wraps Pulumi's private `run_pulumi_func`, in this one place only.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks, rpc
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from lockstep.timing.config import NAMESPACE
from lockstep.infra.config import TEXT_KEYS
from lockstep.timing.model import HeartbeatService

PROJECT = "lockstep"
STACK = "render"
SECRET_MARK = "[secret]"
MOCK_SUFFIX = "rendered-offline"
# An obviously fake broker URL for renders without the real secret; it is still passed as
# a Pulumi secret, so it travels exactly the path the real one does.
PLACEHOLDER_BROKER_URL = "amqp://placeholder:placeholder@rabbitmq.invalid:5672/%2F"
_SECRET_SIG = rpc._special_secret_sig
_SIG_KEY = rpc._special_sig_key


@dataclass(frozen=True)
class Recorded:
    urn: str
    type: str
    name: str
    custom: bool
    parent: str | None
    inputs: dict[str, Any]
    secret_paths: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    provider: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    arn: str | None = None

    @property
    def is_kubernetes(self) -> bool:
        return self.custom and self.type.startswith("kubernetes:") and "apiVersion" in self.inputs

    @property
    def is_aws(self) -> bool:
        return self.custom and self.type.startswith("aws:")

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]


def _blank(value: Any) -> Any:
    """A secret's shape with every leaf replaced: `stringData: {amqp-url: [secret]}`."""
    if isinstance(value, dict):
        return {k: _blank(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(v) for v in value]
    return SECRET_MARK


def _redact(value: Any, path: str, found: list[str]) -> Any:
    """Replace every Pulumi secret's leaves by SECRET_MARK, remembering where it was."""
    if isinstance(value, dict):
        if value.get(_SIG_KEY) == _SECRET_SIG:
            found.append(path)
            return _blank(_redact(value.get("value"), path, []))
        return {k: _redact(v, f"{path}.{k}" if path else k, found) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, f"{path}.{i}", found) for i, v in enumerate(value)]
    return value


class _Mocks(mocks.Mocks):
    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ.startswith("aws:"):
            state.setdefault("arn", f"arn:aws:mock:::{args.name}/{MOCK_SUFFIX}")
        return f"{args.name}-{MOCK_SUFFIX}", state

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


class _Monitor(mocks.MockMonitor):
    """The mock monitor, keeping what it is asked to register (URN, parent, inputs)."""

    def __init__(self) -> None:
        super().__init__(_Mocks())
        self.lock = threading.Lock()
        self.seen: dict[str, dict[str, Any]] = {}
        self.outputs: dict[str, dict[str, Any]] = {}

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = rpc.deserialize_properties(request.object)
            with self.lock:
                self.seen[response.urn] = {"type": request.type, "name": request.name,
                                           "custom": bool(request.custom),
                                           "parent": request.parent or None, "inputs": inputs,
                                           "provider": request.provider or None}
        return response

    def registrations(self) -> dict[str, Any]:
        with self.lock:
            return self.get_registered_resources()

    def RegisterResourceOutputs(self, request: Any) -> Any:
        with self.lock:
            self.outputs[request.urn] = rpc.deserialize_properties(request.outputs)
        return super().RegisterResourceOutputs(request)


def config_strings(values: dict[str, Any], secrets: dict[str, str]) -> dict[str, str]:
    """Config as the Pulumi engine passes it to a program: every value a string, structured
    values as JSON, namespaced keys."""
    out = {}
    for key, value in values.items():
        text = value if key in TEXT_KEYS and isinstance(value, str) else json.dumps(value)
        out[f"{NAMESPACE}:{key}"] = text
    for key, value in secrets.items():
        out[f"{NAMESPACE}:{key}"] = value
    return out


def _broker_key(values: dict[str, Any]) -> str | None:
    hb = values.get("heartbeat")
    if not isinstance(hb, dict):
        return None
    key = hb.get("broker_secret_key", HeartbeatService.model_fields["broker_secret_key"].default)
    return key if isinstance(key, str) else None


class Recorder:
    """One mock run. `registered` holds what the monitor was asked to register, even when
    the program failed (then it must be empty: the model is checked first)."""

    def __init__(self) -> None:
        self.monitor = _Monitor()

    @property
    def registered(self) -> list[str]:
        return list(self.monitor.seen)

    def run(self, values: dict[str, Any], secrets: dict[str, str] | None = None) -> list[Recorded]:
        from lockstep.infra.program import run

        secrets = dict(secrets or {})
        broker = _broker_key(values)
        if broker is not None:
            secrets.setdefault(broker, PLACEHOLDER_BROKER_URL)
        monitor = self.monitor
        pulumi.runtime.set_all_config(config_strings(values, secrets),
                                      [f"{NAMESPACE}:{k}" for k in secrets])
        # A fresh root stack per run: the root keeps stack transformations, and a reused one
        # would run every earlier recorder's transformation too (slower with every run).
        pulumi.runtime.reset_options(project=PROJECT, stack=STACK, preview=False)
        mocks.set_mocks(monitor.mocks, project=PROJECT, stack=STACK, preview=False,
                        monitor=monitor)
        order: list[tuple[pulumi.Resource, list[pulumi.Resource]]] = []

        def transformation(args: pulumi.ResourceTransformationArgs) -> None:
            # Mocks do not see resource options; a stack transformation does.
            deps = args.opts.depends_on if args.opts is not None else None
            if isinstance(deps, pulumi.Resource):
                deps = [deps]
            order.append((args.resource,
                          [d for d in (deps or []) if isinstance(d, pulumi.Resource)]))
            return None

        def program() -> None:
            pulumi.runtime.register_stack_transformation(transformation)
            run()

        try:
            _sync_await(run_pulumi_func(program))
        finally:
            pulumi.runtime.set_all_config({}, [])
        return self._collect(order)

    def _collect(self, order: list[tuple[pulumi.Resource, list[pulumi.Resource]]]) -> list[Recorded]:
        async def urns() -> dict[int, str]:
            found: dict[int, str] = {}
            for res, deps in order:
                for r in (res, *deps):
                    if id(r) not in found:
                        found[id(r)] = await r.urn.future()
            return found

        urn_of = _sync_await(urns())
        out = []
        for res, deps in order:
            urn = urn_of[id(res)]
            seen = self.monitor.seen.get(urn)
            if seen is None:
                continue
            paths: list[str] = []
            inputs = _redact(seen["inputs"], "", paths)
            state = self.monitor.registrations().get(urn)
            out.append(Recorded(
                urn=urn, type=seen["type"], name=seen["name"], custom=seen["custom"],
                parent=seen["parent"], inputs=inputs, secret_paths=tuple(paths),
                depends_on=tuple(urn_of[id(d)] for d in deps), provider=seen["provider"],
                outputs=_redact(self.monitor.outputs.get(urn, {}), "", []),
                id=state.id if state is not None and seen["custom"] else None,
                arn=(state.state.get("arn") if state is not None and seen["custom"] else None)))
        return out


def record(values: dict[str, Any], secrets: dict[str, str] | None = None) -> list[Recorded]:
    """Run `infra.program.run` under mocks and return every registered resource (see the
    module docstring for the contract)."""
    return Recorder().run(values, secrets)
