"""Add the do-no-harm gate's gain table to a selector bundle trained before the gate.

``camp train`` writes the table into every bundle it trains (learning/train.py
``gain_table``). A bundle trained earlier has none, and the gate then takes the selector's
choice unchecked. This script computes the table from the training scores ``camp train``
kept beside the bundle (``train_scores-<key>.json``), with the bundle's own configuration,
and saves the bundle again with the table in its metadata; the weights, contexts and CSIs
are left as they were.

    .venv/bin/python scripts/add_gain_table.py --bundle src/camp_planner/data/namo-tamp.pt \\
        --scores artifacts/namo/tamp/seed0/train_scores-<key>.json [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from camp_planner.core.errors import CampError
from camp_planner.learning.bundle import load_bundle
from camp_planner.learning.labels import Score, ScoreMatrix
from camp_planner.learning.selector import SelectorConfig
from camp_planner.learning.train import gain_table
from camp_planner.workflow import Pipeline


def load_matrix(path: Path) -> ScoreMatrix:
    """A ``train_scores-<key>.json`` as ``camp train`` writes it."""
    try:
        data = json.loads(path.read_text())
        scores = {
            (int(s["task"]), str(s["context_id"])): Score.from_json(s) for s in data["scores"]
        }
        return ScoreMatrix(
            [int(t) for t in data["tasks"]], [str(c) for c in data["contexts"]], scores
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CampError(f"cannot read training scores {path}: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bundle", type=Path, required=True, help="the bundle to complete")
    parser.add_argument("--scores", type=Path, required=True, help="its train_scores-<key>.json")
    parser.add_argument("--out", type=Path, help="where to save (default: over --bundle)")
    args = parser.parse_args(argv)
    try:
        bundle = load_bundle(args.bundle)
        domain = bundle.domain
        config = bundle.metadata["config"]
        planner = str(bundle.metadata["planner"])
        matrix = load_matrix(args.scores)
        missing = [c.id for c in bundle.space if c.id not in matrix.context_ids]
        if missing:
            raise CampError(
                f"{args.scores} has no scores for {len(missing)} of the bundle's contexts"
            )
        pipe = Pipeline.from_config(domain, config, Path("artifacts"))
        cfg = SelectorConfig.from_mapping(dict(config["selector"]))
        table = gain_table(pipe, matrix, cfg, planner)
        bundle.metadata["gain_table"] = table.to_json()
        bundle.save(args.out or args.bundle)
    except CampError as exc:
        print(f"add_gain_table: error: {exc}", file=sys.stderr)
        return 2
    out = args.out or args.bundle
    print(f"gain table for {len(table.gains)} contexts ({table.cost} cost) saved to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
