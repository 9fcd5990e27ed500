"""Planning time against world size: several `bench_namo.py` runs in one table and one plot.

Each input is the ``--json`` file of one ``scripts/bench_namo.py`` run (e.g. one per world
size, ``research/config/namo-grid3.yaml``,
``config/namo/grid4.yaml``, ``grid5.yaml``). For each run it prints the boxes per
task, the median planning time of pure TAMP, the CAMP and Stilman's algorithm with their
success rates, the median ratio pure ÷ CAMP with its 95 % interval, the paired time saved
and the boxes pure planning and the CAMP moved per run (runs recorded since 2026-11-27), as a
Markdown table; then, per run, where pure planning's and the CAMP's time went (selection
and CAMP construction, task and motion planning, grasps and placements, route searches,
collision checks, and the rest: the simulator's steps and the symbolic bookkeeping of
refinement; mean seconds per run) as a second. ``--plot`` draws median times (with the
interquartile range) and the ratio against the boxes per task. It reads the files only
(no planning).

``--paired`` with two runs of the same tasks and planner seeds (e.g. two settings) also
prints each planner's time, the first run minus the second, paired run by run.

Runs of the same world joined with ``+`` (``a.json+b.json``) are pooled into one row: their
rows together, the median ratio and its 95 % bootstrap interval computed again from them.
Both must come from the same configuration and settings.

    .venv/bin/python scripts/plot_bench_namo.py artifacts/bench/grid3.json \\
        artifacts/bench/grid4.json artifacts/bench/grid5.json [--plot artifacts/bench/grid.png]

``--save`` writes the runs given into one file, which the script reads back as all of them
(``docs/results/data/namo_bench_curve.json`` is the scaling curve kept that way).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from camp_planner.core.errors import CampError
from camp_planner.eval.paired import bootstrap_interval, paired_difference
from camp_planner.eval.stages import STAGES, TOP_STAGES, stage_means

PLANNERS = (("pure", "pure TAMP"), ("camp", "CAMP"), ("stilman", "Stilman"))


def load_run(path: Path, data: Any = None) -> dict[str, Any]:
    """One bench run (``data``, else the file's): its rows and summary, checked for the
    fields the table needs."""
    try:
        if data is None:
            data = json.loads(path.read_text())
        rows, summary = data["rows"], data["summary"]
        for row in rows:
            for key, _ in PLANNERS:
                float(row[key]["compute_time_s"])
                bool(row[key]["success"])
        float(summary["median_ratio_pure_over_camp"])
    except (OSError, json.JSONDecodeError) as exc:
        raise CampError(f"cannot read {path}: {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise CampError(f"{path} is not a bench_namo.py --json file ({exc!r} missing)") from None
    if not rows:
        raise CampError(f"{path} holds no runs")
    return {"path": path, "rows": rows, "summary": summary}


def load_runs(spec: str) -> list[dict[str, Any]]:
    """The runs ``spec`` names: one (or several pooled with ``+``), or each run of a file
    that ``--save`` wrote (``{"runs": [...]}``: a curve kept as one record)."""
    if "+" not in spec:
        path = Path(spec)
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CampError(f"cannot read {path}: {exc}") from None
        if isinstance(data, dict) and isinstance(data.get("runs"), list):
            return [load_run(Path(r.get("name", path.stem)), r) for r in data["runs"]]
    return [load_pooled(spec)]


def load_pooled(spec: str) -> dict[str, Any]:
    """One run, or several joined with ``+`` pooled into one (see the module docstring)."""
    runs = [load_run(Path(part)) for part in spec.split("+")]
    if len(runs) == 1:
        return runs[0]
    same = ("config", "settings", "context", "boxes_per_task")
    for other in runs[1:]:
        for key in same:
            if other["summary"].get(key) != runs[0]["summary"].get(key):
                raise CampError(
                    f"cannot pool {runs[0]['path']} and {other['path']}: their {key} differ "
                    f"({runs[0]['summary'].get(key)!r} and {other['summary'].get(key)!r})"
                )
    rows = [row for run in runs for row in run["rows"]]
    ratios = [
        float(r["pure"]["compute_time_s"]) / max(float(r["camp"]["compute_time_s"]), 1e-9)
        for r in rows
    ]
    summary = dict(runs[0]["summary"])
    summary["median_ratio_pure_over_camp"] = statistics.median(ratios)
    summary["median_ratio_interval_95"] = list(bootstrap_interval(ratios, "median"))
    name = f"{runs[0]['path'].stem} + {len(runs) - 1} more"
    return {"path": Path(name), "rows": rows, "summary": summary}


def run_stats(run: dict[str, Any]) -> dict[str, Any]:
    """The table's numbers for one run."""
    rows, summary = run["rows"], run["summary"]
    out: dict[str, Any] = {
        "name": run["path"].stem,
        "boxes": summary.get("boxes_per_task"),
        "runs": len(rows),
        "ratio": summary["median_ratio_pure_over_camp"],
        "ratio_interval": summary.get("median_ratio_interval_95", [None, None]),
        "saved": paired_difference(
            [float(r["pure"]["compute_time_s"]) for r in rows],
            [float(r["camp"]["compute_time_s"]) for r in rows],
        ),
    }
    for key, _ in PLANNERS:
        times = sorted(float(r[key]["compute_time_s"]) for r in rows)
        q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
        # Boxes moved per run: recorded by bench_namo.py since 2026-11-27 (None before).
        picks = [int(r[key]["picks"]) for r in rows if "picks" in r[key]]
        out[key] = {
            "median": statistics.median(times),
            "mean": statistics.mean(times),
            "q1": q[0],
            "q3": q[2],
            "success": sum(bool(r[key]["success"]) for r in rows),
            "picks": statistics.mean(picks) if len(picks) == len(rows) else None,
        }
    return out


def paired_runs(first: dict[str, Any], second: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each planner's time in ``first`` minus ``second``, paired by (task, seed); both runs
    must hold the same pairs."""
    by_key = [
        {(r["task"], r["seed"]): r for r in run["rows"] if "task" in r} for run in (first, second)
    ]
    if not by_key[0] or set(by_key[0]) != set(by_key[1]):
        raise CampError(
            f"{first['path']} and {second['path']} do not hold the same (task, seed) runs"
        )
    keys = sorted(by_key[0])
    return {
        label: paired_difference(
            [float(by_key[0][k][label]["compute_time_s"]) for k in keys],
            [float(by_key[1][k][label]["compute_time_s"]) for k in keys],
        )
        for label, _ in PLANNERS
    }


def markdown(stats: list[dict[str, Any]]) -> str:
    head = "| run | boxes per task | " + " | ".join(
        f"{label} median s (mean) | ok" for _, label in PLANNERS
    )
    lines = [
        head + " | pure ÷ CAMP, median [95 %] | pure − CAMP per run [95 %], CAMP faster "
        "| boxes moved per run, pure / CAMP |",
        "|---" * (5 + 2 * len(PLANNERS)) + "|",
    ]
    for s in stats:
        boxes = "?" if s["boxes"] is None else f"{s['boxes']:.1f}"
        cells = [
            f"{s[k]['median']:.2f} ({s[k]['mean']:.2f}) | {s[k]['success']}/{s['runs']}"
            for k, _ in PLANNERS
        ]
        lo, hi = s["ratio_interval"]
        interval = "" if lo is None else f" [{lo:.2f}, {hi:.2f}]"
        d = s["saved"]
        saved = (
            f"{d['mean']:+.2f} s [{d['ci_low']:+.2f}, {d['ci_high']:+.2f}], "
            f"{d['a_wins']}/{d['pairs']}"
        )
        pure_picks, camp_picks = s["pure"]["picks"], s["camp"]["picks"]
        moved = (
            "–"
            if pure_picks is None or camp_picks is None
            else (f"{pure_picks:.1f} / {camp_picks:.1f}")
        )
        lines.append(
            f"| {s['name']} | {boxes} | "
            + " | ".join(cells)
            + f" | {s['ratio']:.2f}×{interval} | {saved} | {moved} |"
        )
    return "\n".join(lines)


def stage_markdown(runs: list[dict[str, Any]]) -> str:
    """Where pure planning's and the CAMP's time went in each run (mean seconds per run, by
    :data:`~camp_planner.eval.stages.STAGES`), side by side: one row per run and planner."""
    lines = [
        "| run | planner | total | " + " | ".join(n for _, n in STAGES) + " | the rest |",
        "|---" * (4 + len(STAGES)) + "|",
    ]
    for run in runs:
        for key, label in PLANNERS[:2]:
            results = [r[key] for r in run["rows"]]
            means = stage_means(results)
            total = statistics.fmean(float(r["compute_time_s"]) for r in results)
            cells = [f"{means[k]:.2f}" if k in means else "–" for k, _ in STAGES]
            rest = total - sum(means.get(k, 0.0) for k in TOP_STAGES)
            row = f"| {run['path'].stem} | {label} | {total:.2f} | " + " | ".join(cells)
            lines.append(f"{row} | {rest:.2f} |")
    return "\n".join(lines)


def plot(stats: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [s["boxes"] if s["boxes"] is not None else i for i, s in enumerate(stats)]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    for key, label in PLANNERS:
        med = [s[key]["median"] for s in stats]
        low = [s[key]["median"] - s[key]["q1"] for s in stats]
        high = [s[key]["q3"] - s[key]["median"] for s in stats]
        ax.errorbar(xs, med, yerr=[low, high], marker="o", capsize=3, label=label)
    ax.set_xlabel("boxes per task")
    ax.set_ylabel("planning time per task, s (median, IQR)")
    ax.set_yscale("log")
    ax.legend()
    ax.grid(alpha=0.3)
    ratios = [s["ratio"] for s in stats]
    lo = [s["ratio"] - (s["ratio_interval"][0] or s["ratio"]) for s in stats]
    hi = [(s["ratio_interval"][1] or s["ratio"]) - s["ratio"] for s in stats]
    bx.errorbar(xs, ratios, yerr=[lo, hi], marker="o", capsize=3, color="#16a34a")
    bx.axhline(1.0, color="#6b7280", lw=0.8)
    bx.set_xlabel("boxes per task")
    bx.set_ylabel("pure ÷ CAMP planning time (median, 95 %)")
    bx.grid(alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "runs", nargs="+", help="bench_namo.py --json files (a+b: pool runs of one world)"
    )
    parser.add_argument("--plot", type=Path, help="write the plot (PNG) here")
    parser.add_argument(
        "--save",
        type=Path,
        help="also write the runs into this one JSON file (which this script reads back as "
        "all of them): a curve kept as one record",
    )
    parser.add_argument(
        "--paired",
        action="store_true",
        help="with two runs of the same tasks and seeds (e.g. two settings): each planner's "
        "time, first run minus second, paired task by task and seed by seed",
    )
    args = parser.parse_args(argv)
    if args.paired and len(args.runs) != 2:
        parser.error("--paired takes exactly two runs")
    try:
        runs = [run for p in args.runs for run in load_runs(p)]
        stats = [run_stats(run) for run in runs]
        paired = paired_runs(runs[0], runs[1]) if args.paired else None
    except CampError as exc:
        print(f"plot_bench_namo: error: {exc}", file=sys.stderr)
        return 2
    print(markdown(stats))
    print(
        "\nWhere the time went (mean seconds per run; route searches and collision checks are "
        "a part of the planning stages before them):\n"
    )
    print(stage_markdown(runs))
    if paired is not None:
        print(f"\n{runs[0]['path'].stem} minus {runs[1]['path'].stem}, per run [95 %]:")
        for label, d in paired.items():
            print(
                f"  {label:<8} {d['mean']:+.2f} s [{d['ci_low']:+.2f}, {d['ci_high']:+.2f}], "
                f"the second faster on {d['a_wins']} of {d['pairs']}"
            )
    if args.save is not None:
        kept = [{"name": r["path"].stem, "rows": r["rows"], "summary": r["summary"]} for r in runs]
        args.save.write_text(json.dumps({"runs": kept}, indent=1))
        print(f"runs: {args.save}")
    if args.plot is not None:
        plot(stats, args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
