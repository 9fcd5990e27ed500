"""Learning to select contexts: label scoring, the torch selector, bundles, baselines.

Kept light: importing this package does not import torch (the CLI lists method names
without paying for it)."""

METHOD_NAMES = (
    "camp",
    "camp_ablation",
    "pure",
    "plan_transfer",
    "policy",
    "task_policy",
    "oracle",
    "oracle_rerun",
)
# Baselines that only make sense in some domains (listed in ``Domain.baselines``): Stilman's
# NAMO algorithm. ``camp eval`` runs them by default where the domain lists them.
DOMAIN_METHODS = ("stilman",)
# Run only when asked for: the paper's CAMP, which plans in the selector's choice without the
# do-no-harm gate (learning/gate.py), to measure what the gate changes side by side.
EXTRA_METHODS = ("camp_ungated",)
ALL_METHODS = METHOD_NAMES + DOMAIN_METHODS + EXTRA_METHODS
