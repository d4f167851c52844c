"""`lockstep audit PATH...`: the invariants on manifests and target groups that exist."""

from __future__ import annotations

import argparse
import gc
import re
import sys
from itertools import islice

from lockstep.timing import ending
from lockstep.timing.inputs import ConfigError
from lockstep.timing.inputs import display_name
from lockstep.timing.limits import SECONDS
from lockstep.timing.textio import cut, cut_text

EPILOG = """\
PATH: a file, a directory (recursive: *.yaml, *.yml, *.json) or - for stdin, e.g.
  kubectl get ns,ingressclass,ingress,svc,deploy,sts,ds,pdb,hpa,targetgroupbindings -A -o yaml | lockstep audit -
  aws elbv2 describe-target-groups > tgs.json; lockstep audit manifests/ tgs.json
  kubectl kustomize overlays/prod | lockstep audit -   (a kustomize tree: audit what it builds)
  with Argo Rollouts installed, add rollouts to the kubectl get list; with Istio, add
  gateways.networking.istio.io,virtualservices,destinationrules and the istio ConfigMap (cm)
App facts no manifest states come from workload annotations lockstep.dev/warmup-seconds,
max-request-seconds, finish-seconds, max-recovery-seconds, keepalive-seconds, and
drain-seconds (a preStop command that is not a sleep); a rule they
would decide is reported as skipped, naming the annotation. lockstep.dev/accept: id,... marks
a deliberate exception (reported as accepted).
--fix: the nearest numbers every rule accepts, per workload, found by a solver and written as
a unified diff of the files read (comments and formatting kept; --write applies it). What a
manifest only describes (lockstep.dev/* app facts, AWS's description of a target group) is
listed for a person to change, never written. --keep FIELD pins a field you do not own
(shutdown.grace_s, lb.idle_timeout_s, or 'shop/Deployment/web.lb.*'). With --format sarif,
each result carries the fix as SARIF `fixes`.
exit codes: 0 consistent (warnings allowed), 1 error findings, 2 unreadable or invalid input,
or nothing to audit in it (no workload, target group or heartbeat ConfigMap) without --allow-empty;
with --fix (text, json): 0 the patched manifests pass, 1 they do not (a conflict, a change by
hand), 2 as above"""
VERSION = re.compile(r"^1\.[0-9]{1,2}$")
LINES_PER_WRITE = 500


def _seconds(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(SECONDS.hi)) or int(text) > SECONDS.hi:
        raise argparse.ArgumentTypeError(f"expected whole seconds {SECONDS.lo}–{SECONDS.hi}, got {cut(text)}")
    return int(text)


def _jobs(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 3 or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes 1–999, got {cut(text)}")
    return int(text)


def _version(text: str) -> str:
    if not VERSION.match(text):
        raise argparse.ArgumentTypeError(f"expected a Kubernetes version like 1.30, got {cut(text)}")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="file, directory, or - for stdin")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("--margin", type=_seconds, default=None, metavar="S",
                        help="seconds every timing relation must hold by (default 5)")
    parser.add_argument("--deregistration-propagation", type=_seconds, default=None, metavar="S",
                        help="seconds the LB takes to stop sending to a deregistered target "
                             "(default 15 for ALB, 120 for NLB)")
    parser.add_argument("--kubernetes-version", type=_version, default=None, metavar="X.Y",
                        help="cluster version, for the version-dependent rules (the native sleep preStop action)")
    parser.add_argument("--all", action="store_true", help="text: print every finding in full, passing and skipped ones too")
    parser.add_argument("--assume-lbc-services", action="store_true",
                        help="take a plain `type: LoadBalancer` Service (no loadBalancerClass) for an AWS Load "
                             "Balancer Controller NLB: LBC >= 2.5's Service webhook (on by default) gives new ones "
                             "its class, which the manifests do not show")
    parser.add_argument("--fix", action="store_true",
                        help="print the smallest change of numbers that makes every workload pass, as a diff "
                             "(needs the 'fix' extra)")
    parser.add_argument("--write", action="store_true", help="with --fix: apply the change to the files")
    parser.add_argument("--keep", nargs="+", action="extend", default=[], metavar="FIELD",
                        help="with --fix: fields the fix must not change (a shared ALB's, a platform team's)")
    parser.add_argument("--entry-service", metavar="NAME", default=None,
                        help="the workload a Route 53 failover's health check reaches (default: the only one "
                             "behind an HTTP(S) target group, else the one whose ALB path pattern matches the "
                             "check's path)")
    parser.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                        help="processes that read a large file and judge the workloads (default: the cores this "
                             "process may use; 1: one process); the report is the same for any N")
    parser.add_argument("--allow-empty", action="store_true",
                        help="exit 0 when the input holds nothing to audit (by default that is "
                             "an input error: a `kubectl get` that failed upstream of a pipe)")


def run(args: argparse.Namespace) -> int:
    if (args.write or args.keep) and not args.fix:
        raise ConfigError([f"{'--write' if args.write else '--keep'} needs --fix"])
    if args.write and any(p == "-" for p in args.paths):
        raise ConfigError(["--fix --write needs files (standard input cannot be written back)"])
    from lockstep.timing.audit.reader import Reading
    from lockstep.timing.audit.shape import doc_problems
    from lockstep.timing.forked import default_jobs

    jobs = default_jobs() if args.jobs is None else args.jobs
    # A large file's later part is parsed in a second process while this one imports the rules.
    reading = None if args.fix else Reading(args.paths, jobs=jobs, check=doc_problems)
    # The first import builds some 25,000 tracked objects that live to the end (the model's
    # classes, the rules): the collector, on, walks them again and again while they are built
    # (of the whole run's 69 collections, 0.016 s, most are here). They go to its oldest
    # generation at once instead (as `audit` does with what it builds).
    first = "lockstep.timing.audit.core" not in sys.modules
    if first:
        gc.disable()
    try:
        from lockstep.timing import limits as L
        from lockstep.timing.audit.core import audit
        from lockstep.timing.invariants import Ctx, parse_version
    finally:
        if first:
            gc.freeze()
            gc.unfreeze()
            gc.enable()

    margin = L.MARGIN_DEFAULT if args.margin is None else args.margin
    version = parse_version(args.kubernetes_version) if args.kubernetes_version else (0, 0)
    options: dict[str, object] = {} if args.deregistration_propagation is None else {
        "deregistration_propagation_s": args.deregistration_propagation}
    if args.assume_lbc_services:
        options["assume_lbc_services"] = True
    if args.entry_service is not None:
        options["entry_service"] = args.entry_service
    repair = None
    try:
        if args.fix:
            try:
                import lockstep.timing.fix.solve  # noqa: F401 - z3 first: the message names the solver
                from lockstep.timing.fix.manifests import fix_manifests
            except ModuleNotFoundError as err:
                raise ConfigError([f"needs the 'fix' extra (module {err.name or 'z3'} is not installed): "
                                   "pip install 'lockstep[fix]'"]) from None
            repair = fix_manifests(args.paths, Ctx(margin, version), options, tuple(args.keep))
            result = repair.before
        else:
            # The text report without --all prints only how many findings pass: the audit
            # counts them instead of keeping them.
            keep_passing = args.all or args.format != "text"
            result = audit(args.paths, Ctx(margin, version), options, jobs=jobs, reading=reading,
                           keep_passing=keep_passing)
    except ConfigError:
        raise
    except RecursionError:
        raise ConfigError(["input nested too deeply to read"]) from None
    except Exception as err:  # noqa: BLE001 - the contract is a message and exit 2, never a traceback
        raise ConfigError([f"cannot audit the input: {err.__class__.__name__}: {cut_text(str(err), 200)}"]) from None
    if not result.judged and not result.problems and not args.allow_empty:
        raise ConfigError([f"nothing to audit in {cut_text(', '.join(map(display_name, args.paths)), 200)}: no workload, "
                           "target group or heartbeat ConfigMap in the input (pass --allow-empty to accept that)"])
    if args.kubernetes_version is None:
        result.notes.append("the native sleep preStop rule is not checked: pass --kubernetes-version X.Y")
    if result.problems and not result.judged:
        raise ConfigError(result.problems)  # nothing else to report: the input problems alone
    if repair is not None and args.format != "sarif":
        from lockstep.timing.audit.fixout import print_fix, write_fix

        print_fix(repair, args.format, args.write)
        if args.write:
            write_fix(repair, args.format)
        if result.problems:
            raise ConfigError(result.problems)
        return 0 if repair.ok else 1
    if args.format == "json":
        from lockstep.timing.audit.report import as_json
        sys.stdout.write(as_json(result) + "\n")
    elif args.format == "sarif":
        from lockstep.timing.audit.sarif import as_sarif
        sys.stdout.write(as_sarif(result, repair=repair) + "\n")
    else:
        from lockstep.timing.audit.report import text_lines

        # A few hundred lines a write: one write a line was one system call a line (13,188 on
        # 1,000 workloads) wherever stdout is unbuffered (PYTHONUNBUFFERED, python -u), and a
        # report held whole is three copies of it (see `text_lines`).
        lines = text_lines(result, args.all)
        while chunk := list(islice(lines, LINES_PER_WRITE)):
            sys.stdout.write("\n".join(chunk) + "\n")
    ending.keep(result)
    if result.problems:  # the report of everything else is out; the unusable input is exit 2
        raise ConfigError(result.problems)
    return 1 if result.failed else 0
