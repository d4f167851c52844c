"""`lockstep heartbeat --once --dry-run`: replay recorded observations through the real
runtime (same `Runtime`, same `Publisher`, a sink that confirms at once) and print what
would be published, in publication order.

Recorded file (JSON): `{"schema_version": 1, "start": ISO time, "end": seconds,
"series": [{"t": seconds, "items": [Deployment/StatefulSet objects as the API serves them],
"pods": {"<namespace>/<name>": [pod objects]}} | {"t": seconds, "error": "..."}]}`.
Each entry holds from its `t` until the next one; the replay observes every
`observe_interval_s` and publishes every `publish_interval_s`, as the service would. The
gateway is simulated: it applies each command and acknowledges it one second later, and the
printout shows that step (`applied`) between a command and the first beat that reports it.
A replay covers at most `MAX_REPLAY_S` simulated seconds (a longer `end` is refused).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, TextIO

from lockstep.heartbeat.messages import BEATS, COMMANDS, Message, ack_message
from lockstep.heartbeat.observe import Key, Snapshot, needs_pods, pod_from_k8s, snapshot_from_k8s
from lockstep.heartbeat.publish import Publisher
from lockstep.heartbeat.runtime import Runtime
from lockstep.timing.config import ConfigError
from lockstep.timing.heartbeat_config import RuntimeConfig

EXAMPLE = Path(__file__).resolve().parent / "examples" / "observations.json"
MAX_REPLAY_S = 7 * 86400  # a week of simulated seconds: about a minute of replay at most


@dataclass(frozen=True)
class Entry:
    t: float
    snapshots: dict[Key, Snapshot] | None
    error: str | None
    note: str = ""


@dataclass(frozen=True)
class Recording:
    start: float
    end: float
    entries: tuple[Entry, ...]


def load(path: str | Path | None) -> Recording:
    target = Path(path) if path is not None else EXAMPLE
    try:
        doc = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError([f"{target}: no such file"]) from None
    except (OSError, ValueError) as err:
        raise ConfigError([f"{target}: not readable JSON ({err.__class__.__name__}: {err})"]) from None
    except RecursionError:
        raise ConfigError([f"{target}: not readable JSON (nested too deeply)"]) from None
    try:
        return parse(doc)
    except (ValueError, TypeError, KeyError) as err:
        raise ConfigError([f"{target}: {err}"]) from None


def parse(doc: Any) -> Recording:
    if not isinstance(doc, dict) or not isinstance(doc.get("series"), list) or not doc["series"]:
        raise ValueError("series: expected a non-empty list of observations")
    try:
        start = datetime.fromisoformat(str(doc.get("start", "1970-01-01T00:00:00Z")).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ValueError(f"start: expected an ISO 8601 time (got {doc.get('start')!r})") from None
    entries = []
    last_t = -1.0
    for i, raw in enumerate(doc["series"]):
        where = f"series.{i}"
        t = raw.get("t") if isinstance(raw, dict) else None
        if not isinstance(t, (int, float)) or isinstance(t, bool) or t != t or t <= last_t or t > MAX_REPLAY_S:
            raise ValueError(f"{where}.t: expected seconds, increasing, at most {MAX_REPLAY_S} (got {t!r})")
        last_t = float(t)
        if "error" in raw:
            entries.append(Entry(float(t), None, str(raw["error"]), str(raw.get("note", ""))))
            continue
        snaps: dict[Key, Snapshot] = {}
        items, all_pods = raw.get("items") or [], raw.get("pods") or {}
        if not isinstance(items, list):
            raise ValueError(f"{where}.items: expected a list")
        if not isinstance(all_pods, dict):
            raise ValueError(f"{where}.pods: expected an object")
        for j, item in enumerate(items):
            try:
                snap = snapshot_from_k8s(item)
            except ValueError as err:
                raise ValueError(f"{where}.items.{j}: {err}") from None
            pods = all_pods.get(f"{snap.namespace}/{snap.name}")
            if pods is not None and needs_pods(snap):
                if not isinstance(pods, list):
                    raise ValueError(f"{where}.pods.{snap.namespace}/{snap.name}: expected a list")
                try:
                    snap = replace(snap, pods=tuple(pod_from_k8s(p) for p in pods))
                except ValueError as err:
                    raise ValueError(f"{where}.pods.{snap.namespace}/{snap.name}: {err}") from None
            snaps[snap.key] = snap
        entries.append(Entry(float(t), snaps, None, str(raw.get("note", ""))))
    end = doc.get("end", last_t)
    if not isinstance(end, (int, float)) or isinstance(end, bool) or end != end or not 0 <= end <= MAX_REPLAY_S:
        raise ValueError(f"end: expected seconds from 0 to {MAX_REPLAY_S} (got {end!r})")
    return Recording(start, max(float(end), last_t), tuple(entries))


class Replay:
    """An observer answering from the recording at the replay's current time."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self.now = 0.0

    def observe(self) -> dict[Key, Snapshot]:
        current = [e for e in self.rec.entries if e.t <= self.now]
        if not current:
            raise RuntimeError("no observation recorded yet")
        entry = current[-1]
        if entry.snapshots is None:
            raise RuntimeError(entry.error or "API error")
        return entry.snapshots


class ConfirmingSink:
    """Confirms every message at once and hands it to `on_send`; plays the gateway too: a
    command is applied and acknowledged at the next poll (one tick, one second later)."""

    def __init__(self, on_send: Callable[[Message], None], wall: Callable[[], float]) -> None:
        self.on_send = on_send
        self.wall = wall
        self._acks: list[bytes] = []

    def send(self, message: Message) -> None:
        self.on_send(message)
        if message.exchange == COMMANDS:
            self._acks.append(json.dumps(ack_message(message.body, gateway="dry-run gateway",
                                                     wall=self.wall())).encode())

    def poll(self) -> list[bytes]:
        out, self._acks = self._acks, []
        return out

    def close(self) -> None:
        pass


def run(cfg: RuntimeConfig, rec: Recording, out: TextIO, *, as_json: bool = False) -> int:
    replay = Replay(rec)
    clock = {"now": 0.0}
    printer = _Printer(out, as_json)
    sent: list[Message] = []
    wall = lambda: rec.start + clock["now"]  # noqa: E731
    publisher = Publisher.for_config(cfg, lambda: ConfirmingSink(sent.append, wall), wall=wall)
    runtime = Runtime(cfg, replay, publisher, instance="dry-run", wall=wall, epoch="0")
    printer.header(cfg, rec)
    quiet = logging.getLogger("heartbeat")
    saved = quiet.propagate, quiet.level
    quiet.propagate, quiet.level = False, logging.CRITICAL  # the printed lines say it all
    try:
        _replay(runtime, replay, rec, clock, printer, sent)
    finally:
        quiet.propagate, quiet.level = saved
    printer.flush()
    return 0


def _replay(runtime: Runtime, replay: Replay, rec: Recording, clock: dict[str, float],
            printer: _Printer, sent: list[Message]) -> None:
    silent_since: float | None = None
    shown_entry: Entry | None = None
    t = 0.0
    while t <= rec.end:
        clock["now"] = replay.now = t
        observing = t >= runtime.next_observe
        runtime.tick(t)
        entry = [e for e in rec.entries if e.t <= t][-1] if rec.entries[0].t <= t else None
        if observing and entry is not None and entry is not shown_entry and entry.snapshots is not None:
            shown_entry = entry
            printer.note(t, f"observed (recorded at +{entry.t:.0f}s): {entry.note}")
            for spec, v in runtime.core.verdicts.items():
                printer.note(t, f"  {spec}: {'healthy' if v.healthy else 'UNHEALTHY'} — {v.reason}")
        if runtime.core.silent and silent_since is None:
            silent_since = t
            problems = "; ".join(f"{k}: {p}" for k, p in runtime.core.critical.items() if p)
            printer.note(t, f"critical failure ({problems}): global failure, no beats")
        elif not runtime.core.silent and silent_since is not None:
            printer.note(t, f"critical components back after {t - silent_since:.0f}s")
            silent_since = None
        acks = runtime.publisher.acks
        for m in sent:
            # Acknowledgements collected this tick come before what the tick then published.
            while acks and acks[0][0] <= t and acks[0][1].message_id != m.message_id and m.exchange == BEATS:
                printer.applied(t, acks.pop(0)[1])
            printer.message(t, m)
        while acks and acks[0][0] <= t:
            printer.applied(t, acks.pop(0)[1])
        sent.clear()
        t += 1.0


class _Printer:
    def __init__(self, out: TextIO, as_json: bool) -> None:
        self.out, self.as_json = out, as_json
        self._beat_key: tuple[Any, ...] | None = None
        self._repeats: list[float] = []

    def header(self, cfg: RuntimeConfig, rec: Recording) -> None:
        if self.as_json:
            return
        specs = ", ".join(f"{s.name} ({s.workload.kind} {s.workload.namespace}/{s.workload.name}: loss "
                          f"{s.loss_time_s}s, recovery {s.recovery_time_s}s)" for s in cfg.specs)
        print(f"# dry run of {cfg.service}: {specs}", file=self.out)
        observing = (f"observe every {cfg.observe_interval_s}s" if cfg.observe_mode == "poll" else
                     f"watch: each recorded change acted on when it appears (relist every {cfg.resync_period_s}s)")
        print(f"# replaying {len(rec.entries)} recorded observations over {rec.end:.0f}s; {observing}, beat every "
              f"{cfg.publish_interval_s}s (TTL {cfg.beat_ttl_s}s); the gateway must acknowledge each command within "
              f"{cfg.ack_timeout_s}s, and a beat states only what it acknowledged", file=self.out)
        print("# lines without '#' are what would be published, in order", file=self.out)

    def message(self, t: float, m: Message) -> None:
        if self.as_json:
            print(json.dumps({"t": t, "exchange": m.exchange, "routing_key": m.routing_key,
                              "ttl_s": m.ttl_s, "body": m.body}, sort_keys=True), file=self.out)
            return
        if m.exchange == BEATS:
            key = (tuple(m.body["healthy"]), tuple(m.body["blocked"]))
            if key == self._beat_key:
                self._repeats.append(t)
                return
            self.flush()
            self._beat_key = key
            print(f"+{t:>4.0f}s  beat     healthy={list(key[0])} blocked={list(key[1])} "
                  f"(ttl {m.ttl_s}s, sent_at {m.body['sent_at']})", file=self.out)
            return
        self.flush()
        self._beat_key = None
        scope = m.body["scope"]
        print(f"+{t:>4.0f}s  command  {m.body['action']:<7} {scope['spec']} "
              f"affected={json.dumps(scope['affected'], sort_keys=True)} — {m.body['reason']}", file=self.out)

    def applied(self, t: float, m: Message) -> None:
        if self.as_json:
            print(json.dumps({"t": t, "exchange": "reply", "type": "applied", "id": m.message_id,
                              "action": m.body["action"], "spec": m.body["scope"]["spec"]}, sort_keys=True),
                  file=self.out)
            return
        self.flush()
        self._beat_key = None
        print(f"+{t:>4.0f}s  applied  {m.body['action']:<7} {m.body['scope']['spec']} — the gateway "
              f"acknowledged {m.message_id}; beats may now report it", file=self.out)

    def note(self, t: float, text: str) -> None:
        if self.as_json:
            return
        self.flush()
        print(f"# +{t:.0f}s {text}", file=self.out)

    def flush(self) -> None:
        if self._repeats:
            print(f"         beat × {len(self._repeats)} unchanged, through +{self._repeats[-1]:.0f}s",
                  file=self.out)
            self._repeats = []
