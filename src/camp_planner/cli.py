"""The ``camp`` command: list contexts, learn CSIs, plan one task, run the demo.

Every user error (unknown domain, planner or context, malformed YAML/JSON) ends in one line on
stderr and exit status 2; nothing prints a traceback for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from camp_planner.config import load_config, load_world_file, world_bundle
from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.csi_command import csi_command
from camp_planner.domains import domain_names, get_domain
from camp_planner.domains.base import RenderPanel
from camp_planner.learning import ALL_METHODS, METHOD_NAMES
from camp_planner.learning.executor import EXECUTORS, ExecutorSpec, close_executors, require
from camp_planner.learning.labels import plan_digest
from camp_planner.planners import planner_names
from camp_planner.progress import progress_bar
from camp_planner.ros.cli import add_parsers as add_ros_parsers
from camp_planner.ros.cli import run as run_ros
from camp_planner.runtime.selection import RULES
from camp_planner.scene_command import add_scene_parser, scene_command
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline

# Imported inside the commands that need them, because they load torch (about 2 s), which
# `camp --help`, `camp contexts` and `camp csi` do not: camp_planner.learning.{bundle, methods,
# train, evaluate, sweeps}. rclpy likewise loads only inside the ROS commands (ros/cli.py).


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _common(p: argparse.ArgumentParser, domain: bool = True) -> None:
    if domain:
        p.add_argument("--domain", default="gridworld", help=f"one of: {', '.join(domain_names())}")
    p.add_argument("--config", type=Path, help="YAML overriding the domain's defaults")
    p.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS, help="cache/output folder")
    if domain:
        world = "a world file (docs/your-building.md): domain and configuration in one; "
        world += "`camp train` writes its bundle beside it (.pt), where world:=FILE finds it"
        p.add_argument("--world", type=Path, metavar="FILE", help=world)
        g = p.add_argument_group("your own PDDL (implies --domain pddl)")
        g.add_argument("--pddl-domain", type=Path, metavar="D.pddl", help="STRIPS domain file")
        g.add_argument(
            "--pddl-problems", type=Path, nargs="+", metavar="P.pddl", help="training problems"
        )
        g.add_argument(
            "--pddl-test",
            type=Path,
            nargs="+",
            metavar="P.pddl",
            help="test problems (default: the training problems)",
        )


PLANNER_DEFAULT_HELP = (
    "default: the domain's own (gridworld: bfs_replan; dinner and pddl: fast_downward; namo: tamp)"
)


def _planner_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--planner", help=f"one of: {', '.join(planner_names())}; {PLANNER_DEFAULT_HELP}"
    )


def _rule_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rule",
        choices=RULES,
        help="how the runtime chooses contexts (default: camp.selection.rule, auto: by the "
        "lower bound on each candidate's objective when the bundle has an objective model, "
        "else the do-no-harm gate; ungated: the paper's CAMP)",
    )


def _workers_arg(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("parallel work (CSI learning and scoring)")
    g.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="parallel workers: local processes, or Ray actors of one CPU each",
    )
    g.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="process",
        help="where the workers run: local processes (default), or Ray (needs the ray "
        'extra; docs/design.md, "Running on a Ray cluster")',
    )
    g.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="with --executor ray: join this Ray cluster (auto: the one `ray start` runs on "
        "this machine; or the head's host:port); default: start Ray on this machine, "
        "loopback only, for this command",
    )


def _executor_spec(args: argparse.Namespace) -> ExecutorSpec:
    """The executor the arguments ask for, checked before any work (Ray installed?)."""
    spec = ExecutorSpec(args.executor, args.workers, args.ray_address)
    require(spec)
    return spec


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="camp",
        description="Learned context-specific abstract MDPs (CAMPs) for fast robot planning.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("contexts", help="list the context space with ids")
    _common(p)
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("csi", help="learn (and cache) context-specific independences")
    _common(p)
    p.add_argument("--context", action="append", help="index, id or name (repeatable)")
    p.add_argument("--all", action="store_true", help="every context of the space")
    p.add_argument("--json", action="store_true", help="print the learned CSIs as JSON")
    p.add_argument(
        "--why",
        action="append",
        metavar="VAR",
        help="explain why the CAMP keeps or drops this state variable: the chain of learned "
        "dependencies that joins it to the reward or the context (repeatable)",
    )

    p = sub.add_parser("plan", help="plan and execute one task under a context")
    _common(p)
    p.add_argument("--task", type=int, default=0, help="task index within the split")
    p.add_argument("--split", choices=("train", "test"), default="test")
    _planner_arg(p)
    p.add_argument(
        "--context",
        help="index, id or name (`camp contexts`); default: the one a selector bundle picks "
        "(with fallbacks), else the universal context",
    )
    p.add_argument(
        "--bundle",
        type=Path,
        help="selector bundle for choosing the context (default: the one `camp train` wrote "
        "for --planner/--seed under --artifacts, else the bundle the package ships, if any)",
    )
    p.add_argument("--pure", action="store_true", help="pure planning in the full MDP")
    p.add_argument("--ablation", action="store_true", help="sink only, no projection")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lambda", dest="lam", type=float, help="override λ of the objective")
    p.add_argument("--timeout", type=float, help="per planning call, seconds")
    p.add_argument(
        "--race",
        metavar="K",
        help="plan the selector's top K contexts and the universal one at once, each in its "
        "own process (K+1 processes share the cores); the first plan that reaches the goal "
        "in the simulator wins and the others are stopped (0: no racing, the default; "
        "domains with a robot plug-in: namo, manip)",
    )
    p.add_argument("--render", type=Path, help="write a PNG of the episode")
    _rule_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser(
        "train",
        help="learn CSIs, score contexts on training tasks (resumable), train the selector",
    )
    _common(p)
    _planner_arg(p)
    p.add_argument("--seed", type=int, default=0, help="selector seed (and task-set offset)")
    _workers_arg(p)
    p.add_argument("--json", action="store_true", help="print a JSON summary")

    add_scene_parser(sub, _common)

    p = sub.add_parser("select", help="rank contexts for a task with a trained selector bundle")
    _common(p)
    p.add_argument(
        "--planner", help=f"the planner the bundle was trained for; {PLANNER_DEFAULT_HELP}"
    )
    p.add_argument("--seed", type=int, default=0, help="which training run's bundle")
    p.add_argument(
        "--bundle",
        type=Path,
        help="bundle path (default: the one `camp train` wrote for --planner/--seed under "
        "--artifacts, else the bundle the package ships, if any)",
    )
    p.add_argument("--task", type=int, default=0, help="task index within the split")
    p.add_argument("--split", choices=("train", "test"), default="test")
    p.add_argument("--top", type=int, default=5, help="how many ranked contexts to show")
    _rule_arg(p)
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser(
        "eval",
        help="every method on the held-out test tasks over K seeds: results.json, table.md, plot",
    )
    _common(p)
    _planner_arg(p)
    p.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help=f"any of: {', '.join(ALL_METHODS)} (default: {', '.join(METHOD_NAMES)}, plus "
        "the domain's own baselines, e.g. stilman for namo)",
    )
    p.add_argument("--seeds", type=int, default=10, help="independent runs (paper: 10)")
    p.add_argument(
        "--first-seed",
        type=int,
        default=0,
        metavar="K",
        help="run seeds K .. K+SEEDS-1 (default 0): extends an earlier eval with new task "
        "draws and planner seeds, for pooling with scripts/pool_evals.py",
    )
    p.add_argument(
        "--task-seed",
        type=int,
        metavar="S",
        help="draw run k's test tasks from generator seed S+k instead of the run's own seed: "
        "tasks never used in development, for a claim (training tasks, their cached scores "
        "and the trained selector stay the run's)",
    )
    p.add_argument(
        "--bundle",
        metavar="PATH|shipped",
        help="evaluate this selector bundle (shipped: the one the package ships) in every run "
        "instead of training one per run; only methods that learn nothing from training "
        "tasks (camp, camp_ablation, camp_ungated, pure, the domain's baselines)",
    )
    _workers_arg(p)
    p.add_argument("--out", type=Path, help="output folder (default: <artifacts>/eval/...)")

    p = sub.add_parser(
        "sweep", help="λ or training-set-size sweep of CAMP (paper 5.3 and appendix), as a plot"
    )
    p.add_argument("kind", choices=("lambda", "train-size"))
    _common(p)
    _planner_arg(p)
    p.add_argument(
        "--values", nargs="+", type=float, help="λ values or training-set sizes to sweep"
    )
    p.add_argument("--seeds", type=int, default=3, help="independent runs per point")
    _workers_arg(p)
    p.add_argument("--out", type=Path, help="output folder (default: <artifacts>/eval/...)")

    p = sub.add_parser(
        "demo", help="one task end to end: best context vs universal, side by side (PNG)"
    )
    _common(p)
    p.add_argument("--task", type=int, default=0, help="test task index")
    _planner_arg(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="PNG path (default: <artifacts>/demo/...)")

    add_ros_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        handler = {
            "contexts": _contexts,
            "csi": lambda a: csi_command(a, _pipeline(a)),
            "plan": _plan,
            "train": _train,
            "select": _select,
            "scene": lambda a: scene_command(a, _pipeline(a)),
            "eval": _eval,
            "sweep": _sweep,
            "demo": _demo,
            "bringup": _ros_cli,
            "ros": _ros_cli,
        }
        return handler[args.command](args)
    except CampError as exc:
        print(f"camp: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("camp: interrupted (finished work is cached)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`camp contexts | head`): not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _ros_cli(args: argparse.Namespace) -> int:
    return run_ros(args)


def _pipeline(args: argparse.Namespace) -> Pipeline:
    """The pipeline the arguments describe; an unnamed ``--planner`` becomes the domain's."""
    pipe = _make_pipeline(args)
    if getattr(args, "planner", "") is None:
        args.planner = pipe.domain.default_planner
    return pipe


def _make_pipeline(args: argparse.Namespace) -> Pipeline:
    world = getattr(args, "world", None)
    if world is not None:
        if args.config is not None or getattr(args, "pddl_domain", None) is not None:
            raise CampError("--world FILE is the configuration: give --config or it, not both")
        name, config = load_world_file(world)
        if args.domain not in ("gridworld", name):  # gridworld: the untouched default
            raise CampError(f"--world {world} is a {name} world, not {args.domain}")
        args.domain, args.config = name, world
        return Pipeline.from_config(name, config, args.artifacts)
    pddl_domain = getattr(args, "pddl_domain", None)
    if pddl_domain is None:
        if getattr(args, "pddl_problems", None) or getattr(args, "pddl_test", None):
            raise CampError("--pddl-problems and --pddl-test need --pddl-domain")
        return Pipeline.create(args.domain, args.config, args.artifacts)
    if args.domain not in ("gridworld", "pddl"):  # gridworld: the untouched default
        raise CampError(
            f"--pddl-domain plans your PDDL; it cannot be combined with --domain {args.domain}"
        )
    if not args.pddl_problems:
        raise CampError("--pddl-domain needs --pddl-problems")

    domain = get_domain("pddl")
    config = load_config(domain, args.config)
    train = [str(p.resolve()) for p in args.pddl_problems]
    test = [str(p.resolve()) for p in (args.pddl_test or args.pddl_problems)]
    config["pddl"].update({"domain": str(pddl_domain.resolve()), "train": train, "test": test})
    config["tasks"] = {"train": len(train), "test": len(test)}
    args.domain = "pddl"
    return Pipeline.from_config("pddl", config, args.artifacts)


def _contexts(args: argparse.Namespace) -> int:
    pipe = _pipeline(args)
    if args.json:
        rows = [
            {"index": i, "id": c.id, "name": c.name, **c.to_json()}
            for i, c in enumerate(pipe.space)
        ]
        print(json.dumps(rows, indent=1, default=str))
        return 0
    print(f"{len(pipe.space)} contexts for {pipe.domain.name}:")
    for i, c in enumerate(pipe.space):
        print(f"  {i:3d}  {c.id:<10}  {c.name}")
    return 0


def _plan(args: argparse.Namespace) -> int:
    pipe = _pipeline(args)
    task = pipe.task(args.split, args.task)
    if args.pure and args.ablation:
        raise CampError("--pure and --ablation exclude each other")
    if args.bundle is not None and (args.context is not None or args.pure or args.ablation):
        raise CampError("--bundle selects the context: drop --context/--pure/--ablation")
    race = _race_k(args.race)
    if race:
        if args.context is not None or args.pure or args.ablation or args.render:
            raise CampError(
                "--race races the selector's contexts: drop --context/--pure/--ablation/--render"
            )
        return _plan_race(args, pipe, task, race)
    selection: dict[str, Any] | None = None
    context: Context | None
    bundle_path = None
    if args.context is None and not args.pure and not args.ablation:
        bundle_path = _plan_bundle(args, pipe)
    if bundle_path is not None:
        context, camp, result, selection = _plan_selected(args, pipe, task, bundle_path)
    else:
        context = None if args.pure else pipe.space.resolve(args.context or "universal")
        result, camp = pipe.run(
            task,
            args.planner,
            context,
            seed=args.seed,
            ablation=args.ablation,
            lam=args.lam,
            timeout_s=args.timeout,
        )
    mdp_vars = [v.name for v in pipe.domain.make_mdp(task, pipe.config).variables]
    dropped = list(camp.dropped_variables) if camp is not None else []
    record = {
        "domain": pipe.domain.name,
        "split": args.split,
        "task": args.task,
        "planner": args.planner,
        "method": "pure" if args.pure else ("ablation" if args.ablation else "camp"),
        "context": ({"id": context.id, "name": context.name} if context is not None else None),
        "relevant_variables": [v for v in mdp_vars if v not in dropped],
        "dropped_variables": dropped,
        "lambda": pipe.lam(args.planner) if args.lam is None else args.lam,
        **result.summary(),
        "plan_digest": plan_digest([list(a) for a in result.actions]),
        # What the runtime tries, in order: a named context alone (pure planning: nothing).
        "fallback_order": (
            selection["fallback_order"]
            if selection is not None
            else ([] if context is None else [context.name])
        ),
    }
    if selection is not None:
        record["selection"] = selection
    if args.render:
        label = context.name if context is not None else "pure planning"
        ctx = context if context is not None else Context.universal()
        pipe.domain.render(task, [RenderPanel(label, ctx, camp, result)], args.render)
        record["render"] = str(args.render)
    if args.json:
        print(json.dumps(record, default=str))
    else:
        for key, value in record.items():
            print(f"{key:>20}: {value}")
    return 0


def _plan_bundle(args: argparse.Namespace, pipe: Any) -> Path | None:
    """The selector bundle ``camp plan`` chooses contexts with, if any."""
    from camp_planner.learning.bundle import shipped_bundle, trained_bundle

    if args.bundle is not None:
        return Path(args.bundle)
    trained = trained_bundle(args.artifacts, pipe.domain.name, args.planner, args.seed, pipe.config)
    if trained.is_file():
        return Path(trained)
    return shipped_bundle(pipe.domain.name, args.planner, pipe.domain.world_name(pipe.config))


def _plan_selected(
    args: argparse.Namespace, pipe: Any, task: Any, path: Path
) -> tuple[Context | None, Any, Any, dict[str, Any]]:
    """Plan ``task`` with the CAMP runtime and the bundle at ``path``: its selection, its
    fallbacks, and what to report about the selection."""
    from camp_planner.learning.bundle import load_bundle
    from camp_planner.runtime.camp_runtime import CampRuntime

    bundle = load_bundle(path, pipe.domain.name, pipe.domain.version)
    if args.lam is not None:
        pipe.config["lambda"][args.planner] = args.lam
    if args.timeout is not None:
        pipe.config["timeout_s"] = float(args.timeout)
    runtime = CampRuntime(pipe, args.planner, bundle, rule=args.rule)
    run = runtime.run(task, args.seed)
    selection = {
        "bundle": str(path),
        "latency_s": round(run.selection.latency_s, 6),
        "ranked": [
            {"id": c.id, "name": c.name, "probability": round(p, 4)}
            for c, p in run.selection.ranked[:5]
        ],
        "fallbacks": run.result.fallbacks,
        **run.selection.to_json(),
    }
    return run.context, run.camp, run.result, selection


def _race_k(value: str | None) -> int:
    """``--race K`` as a number (0: not given)."""
    if value is None:
        return 0
    try:
        k = int(value)
    except ValueError:
        k = -1
    if k < 0:
        raise CampError(
            f"--race takes a whole number of contexts ≥ 0 (0: no racing), got {value!r}"
        )
    return k


def _plan_race(args: argparse.Namespace, pipe: Any, task: Any, k: int) -> int:
    """``camp plan --race K``: race the selector's top K contexts and the universal one, each
    in its own worker process, for ``task`` (see camp_planner.service.race)."""
    from camp_planner.domains import get_plugin, plugin_domains
    from camp_planner.service.race import MAX_RACE, race_once

    if pipe.domain.name not in plugin_domains():
        raise CampError(
            f"--race plans through the planning service, which needs a domain with a robot "
            f"plug-in ({', '.join(plugin_domains())}), not {pipe.domain.name}"
        )
    notes = []
    bundle_path = _plan_bundle(args, pipe)
    others = sum(1 for c in pipe.space if not c.is_universal) if bundle_path else 0
    if k > others:
        notes.append(
            f"--race {k}: there are only {others} contexts other than the universal one"
            + ("" if bundle_path else " (no selector bundle)")
            + f"; racing {others}"
        )
        k = others
    if k > MAX_RACE:
        notes.append(
            f"--race {k}: at most {MAX_RACE} contexts race (each worker holds its own planning "
            f"service in memory); racing {MAX_RACE}"
        )
        k = MAX_RACE
    lam = pipe.lam(args.planner) if args.lam is None else args.lam
    timeout = float(pipe.config["timeout_s"]) if args.timeout is None else args.timeout
    service = {
        "domain": pipe.domain.name,
        "config_path": args.config,
        "bundle_path": bundle_path,
        "artifacts": args.artifacts,
        "planner": args.planner,
    }
    scene = get_plugin(pipe.domain.name).scene_from_task(task, None, "map")
    race, load_s = race_once(service, scene, k, lam, timeout, args.seed)
    notes += [race.note] if race.note else []
    won = race.result
    record: dict[str, Any] = {
        "domain": pipe.domain.name,
        "split": args.split,
        "task": args.task,
        "planner": args.planner,
        "method": "camp-race",
        "context": {"id": race.winner.id, "name": race.winner.name} if race.winner else None,
        "success": won.success,
        "outcome": won.outcome or won.code.name.lower(),
        "message": won.message.splitlines()[0] if won.message else "",
        "return": round(won.expected_return, 4),
        # The objective charges the race's wall-clock time (ranking included).
        "objective": round(won.expected_return - lam * race.wall_s, 4),
        "lambda": lam,
        "relevant_variables": won.relevant,
        "dropped_variables": won.dropped,
        "race": {
            "k": k,
            "wall_s": round(race.wall_s, 4),
            "cpu_s": round(race.cpu_s, 4),
            "load_s": round(load_s, 4),  # starting the K+1 workers, before the race
            "workers": [
                {
                    "context_id": w.context_id,
                    "context": w.context_name,
                    "outcome": w.outcome,
                    "code": w.code.name,
                    "wall_s": round(w.wall_s, 4),
                    "cpu_s": None if w.cpu_s is None else round(w.cpu_s, 4),
                }
                for w in race.workers
            ],
            "notes": notes,
        },
    }
    if args.json:
        print(json.dumps(record, default=str))
        return 0
    for note in notes:
        print(f"camp: note: {note}", file=sys.stderr)
    winner = race.winner.name if race.winner else "none (no raced context reached the goal)"
    print(f"{'winner':>20}: {winner}")
    print(f"{'wall-clock s':>20}: {race.wall_s:.3f} (starting the workers: {load_s:.1f} s)")
    print(f"{'CPU s':>20}: {race.cpu_s:.3f} (all {len(race.workers)} workers)")
    for key in ("success", "outcome", "message", "return", "objective", "lambda"):
        print(f"{key:>20}: {record[key]}")
    for w in race.workers:
        cpu = "" if w.cpu_s is None else f", CPU {w.cpu_s:.2f} s"
        print(f"{'worker':>20}: {w.context_name}: {w.outcome} after {w.wall_s:.2f} s{cpu}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from camp_planner.learning.train import describe, train

    spec = _executor_spec(args)
    pipe = _pipeline(args)
    try:
        result = train(pipe, args.artifacts, args.planner, seed=args.seed, workers=spec)
    finally:
        close_executors()
    summary = describe(result)
    # Beside the world file, where the nodes of world:=FILE look for it (config.world_bundle).
    beside = None if args.world is None else world_bundle(args.world)
    if beside is not None:
        shutil.copyfile(result.bundle_path, beside)
    if args.json:
        print(json.dumps({**summary, **({"world_bundle": str(beside)} if beside else {})}))
        return 0
    print(
        f"scores: {result.stats.reused} reused from the checkpoint, "
        f"{result.stats.computed} computed"
    )
    print(f"selector: {result.iterations} iterations, final loss {result.final_loss:.2e}")
    print("labels (best context per training task):")
    for name, count in sorted(result.label_counts.items(), key=lambda kv: -kv[1]):
        print(f"  {count:3d} × {name}")
    for kind, counts in result.label_counts_by_kind.items():
        print(f"labels of the {sum(counts.values())} {kind} training tasks:")
        for name, count in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"  {count:3d} × {name}")
    print(f"bundle: {result.bundle_path}")
    if beside is not None:
        print(f"world bundle: {beside} (what world:={args.world} loads)")
    return 0


def _select(args: argparse.Namespace) -> int:
    from camp_planner.learning.bundle import load_bundle, trained_bundle
    from camp_planner.runtime.camp_runtime import CampRuntime

    pipe = _pipeline(args)
    trained = trained_bundle(args.artifacts, pipe.domain.name, args.planner, args.seed, pipe.config)
    # As `camp plan` does: a bundle named, else the one `camp train` wrote, else the shipped.
    path = _plan_bundle(args, pipe) or trained
    if path == trained and not trained.is_file():
        others = sorted(p.name for p in trained.parent.glob("selector*.pt"))
        hint = f" (bundles for other configurations: {', '.join(others)})" if others else ""
        raise CampError(
            f"no selector bundle trained for this configuration at {trained}{hint}; "
            "run `camp train` first with the same --config"
        )
    bundle = load_bundle(path, pipe.domain.name, pipe.domain.version)
    task = pipe.task(args.split, args.task)
    mdp = pipe.domain.make_mdp(task, pipe.config)
    runtime = CampRuntime(pipe, args.planner, bundle, rule=args.rule)
    selection = runtime.select(task, mdp)
    rows: list[dict[str, Any]] = []
    for context, prob in selection.ranked[: max(1, args.top)]:
        camp = runtime.build(mdp, context, task)
        rows.append(
            {
                "id": context.id,
                "name": context.name,
                "probability": round(prob, 4),
                "dropped_variables": list(camp.dropped_variables),
                # A template's instance on this task (the context itself otherwise).
                "instance": camp.context.name if camp.context is not None else context.name,
            }
        )
    if args.json:
        payload = {
            "bundle": str(path),
            "latency_s": selection.latency_s,
            "ranked": rows,
            "screened_out": [{"id": c.id, "name": c.name} for c in selection.screened],
            **selection.to_json(),
        }
        print(json.dumps(payload))
        return 0
    print(
        f"selector {path} on {args.split} task {args.task} ({selection.latency_s * 1000:.1f} ms):"
    )
    for r in rows:
        print(
            f"  p={r['probability']:.3f}  {r['id']:<10} {r['name']:<34} "
            f"drops {len(r['dropped_variables'])} variables"
        )
        if r["instance"] != r["name"]:
            print(f"      here: {r['instance']}")
    if selection.screened:
        n = len(selection.screened)
        print(f"  ({n} contexts screened out: their rooms cannot join start and goal)")
    print(f"rule {selection.rule}: {selection.winner}")
    for c in selection.candidates:
        if c.lower_bound is not None:
            print(
                f"  {c.name:<40} predicted {c.predicted_objective:+9.1f}  "
                f"lower bound {c.lower_bound:+9.1f}  ({c.n} training tasks)"
            )
    print(f"  why: {selection.reason}")
    print(f"  fallback order: {' → '.join(selection.fallback_order())}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from camp_planner.config import with_test_seed
    from camp_planner.eval.evaluate import bundle_path, eval_title, evaluate, table_markdown

    spec = _executor_spec(args)
    pipe = _pipeline(args)
    if args.task_seed is not None:
        # A configuration override, so that the caches keyed on it tell the draws apart.
        pipe.config = with_test_seed(pipe.config, args.task_seed)
    bundle = None
    if args.bundle is not None:
        world = pipe.domain.world_name(pipe.config)
        bundle = bundle_path(args.bundle, pipe.domain.name, args.planner, world)
    out = args.out or args.artifacts / "eval" / f"{pipe.domain.name}-{args.planner}"
    command = "camp " + " ".join(sys.argv[1:]) if sys.argv[1:] else "camp eval"
    methods = args.methods or [*METHOD_NAMES, *pipe.domain.baselines]
    if bundle is not None and not args.methods:
        # The methods a given selector can run: the others learn from each run's training.
        methods = ["camp", "pure", *pipe.domain.baselines]
    try:
        summary = evaluate(
            pipe,
            args.artifacts,
            args.planner,
            methods,
            args.seeds,
            spec,
            out,
            command,
            first_seed=args.first_seed,
            bundle_file=bundle,
        )
    finally:
        close_executors()
    title = eval_title(pipe, args.planner, args.seeds, args.first_seed, bundle)
    print(table_markdown(summary, title))
    print(f"wrote {out}/results.json, table.md, plot.png")
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from camp_planner.eval.sweeps import sweep

    if args.seeds < 1:
        raise CampError("--seeds must be at least 1")
    spec = _executor_spec(args)
    pipe = _pipeline(args)
    values = args.values
    if values is None:
        n = len(pipe.tasks("train"))
        values = (
            [0.0, 10.0, 100.0, 1000.0]
            if args.kind == "lambda"
            else sorted({max(1, n // 10), max(1, n // 4), max(1, n // 2), n})
        )
    out = args.out or args.artifacts / "eval" / f"{pipe.domain.name}-{args.planner}"
    try:
        summary = sweep(
            args.kind, pipe, args.artifacts, args.planner, values, args.seeds, spec, out
        )
    finally:
        close_executors()
    for point, pure in zip(summary["points"], summary["pure"], strict=True):
        print(
            f"{args.kind} {point['value']:>8g}: CAMP objective {point['objective']['mean']:8.2f} "
            f"± {point['objective']['std']:.2f}, return {point['return']['mean']:7.2f}, "
            f"compute {point['compute_time_s']['mean']:.3f} s | pure planning objective "
            f"{pure['objective']['mean']:8.2f}"
        )
    print(f"wrote {out}/sweep-{args.kind}.json and .png")
    return 0


def _demo(args: argparse.Namespace) -> int:
    pipe = _pipeline(args)
    task = pipe.task("test", args.task)
    print(f"[demo] {pipe.domain.name} test task {args.task}, planner {args.planner}")
    pipe.learn_csis(label="learning CSIs (cached after the first run)")
    bar = progress_bar(len(pipe.space), "scoring every context on this task", leave=False)
    scored = pipe.score_contexts(
        task, args.planner, seed=args.seed, progress=lambda i, n: bar.update(1)
    )
    bar.close()
    best_ctx, best = scored[0]
    universal = next(r for c, r in scored if c.is_universal)
    print("[demo] top contexts by objective (return − λ·compute):")
    for c, r in scored[:3]:
        print(f"    {c.name:<34} objective {r.objective:8.2f}  return {r.discounted_return:6.2f}")
    mdp = pipe.domain.make_mdp(task, pipe.config)
    camp_best = pipe.build_camp(mdp, best_ctx, task=task)
    print(f"[demo] best context: {best_ctx.name} ({best_ctx.id})")
    print(f"[demo] dropped {len(camp_best.dropped_variables)} of {len(mdp.variables)} variables")
    for label, r in (("best context", best), ("universal", universal)):
        print(
            f"[demo] {label:<12}: return {r.discounted_return:7.2f}  "
            f"compute {r.compute_time_s * 1000:8.1f} ms  objective {r.objective:8.2f}  "
            f"{'reached goal' if r.success else r.outcome}"
        )
    speedup = universal.compute_time_s / max(best.compute_time_s, 1e-9)
    print(f"[demo] planning-time ratio (universal ÷ best): {speedup:.1f}×")
    # The best of many single runs against one run: with a randomised planner the ratio
    # carries the luck of both draws (the oracle's bias); the eval measures it fairly.
    print(
        f"[demo] one run per context: the best of {len(scored)} runs against one; for "
        "means over tasks and seeds see `camp eval` (TAMP's times vary from run to run)"
    )
    out = args.out or args.artifacts / "demo" / f"{pipe.domain.name}_task{args.task}.png"
    panels = [
        RenderPanel(f"CAMP: {best_ctx.name}", best_ctx, camp_best, best),
        RenderPanel("universal context (pure planning)", Context.universal(), None, universal),
    ]
    pipe.domain.render(task, panels, out)
    print(f"[demo] wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
